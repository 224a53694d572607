/// JSON Pointer text (RFC 6901), built one step at a time as ``JSONDiff`` walks a document:
/// the empty string is the whole document, each step adds `/` and a member name (with `~`
/// written `~0` and `/` written `~1`) or an array index.
///
/// ```swift
/// JSONPointer.appending(member: "a/b~c", to: "")   // "/a~1b~0c"
/// JSONPointer.appending(index: 7, to: "/items")    // "/items/7"
/// ```
public enum JSONPointer {
    public static func appending(member name: String, to pointer: String) -> String {
        var pointer = pointer
        pointer.append("/")
        guard name.utf8.contains(where: { $0 == UInt8(ascii: "~") || $0 == UInt8(ascii: "/") }) else {
            pointer.append(name)
            return pointer
        }
        // Unicode scalars, not characters: a name's exact scalars are what the client looks up.
        for scalar in name.unicodeScalars {
            switch scalar {
            case "~": pointer.append("~0")
            case "/": pointer.append("~1")
            default: pointer.unicodeScalars.append(scalar)
            }
        }
        return pointer
    }

    public static func appending(index: Int, to pointer: String) -> String {
        pointer + "/" + String(index)
    }
}
