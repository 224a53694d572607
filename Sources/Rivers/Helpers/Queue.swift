/// A first-in first-out buffer with amortised O(1) `append` and `removeFirst`.
///
/// Operators keep the values they may not deliver yet (no downstream demand, or an earlier
/// inner publisher still running) in one of these. Its methods are inlined into the generic
/// operators, which keeps unspecialised generic code free of a metadata lookup per call;
/// emptied storage is dropped so delivered values are released at once.
///
///     var queue = Queue<Int>()
///     queue.append(1)
///     queue.append(2)
///     queue.removeFirst() // 1
internal struct Queue<Element> {
    private var storage: [Element] = []
    private var head = 0

    @inline(__always)
    var isEmpty: Bool { head == storage.count }

    @inline(__always)
    var count: Int { storage.count - head }

    /// The oldest element. - Precondition: the queue is not empty.
    @inline(__always)
    var first: Element { storage[head] }

    @inline(__always)
    mutating func append(_ element: Element) {
        storage.append(element)
    }

    /// Removes and returns the oldest element. - Precondition: the queue is not empty.
    @inline(__always)
    mutating func removeFirst() -> Element {
        let element = storage[head]
        head += 1
        if head == storage.count {
            storage = []
            head = 0
        } else if head >= 32 && head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return element
    }

    /// Removes and returns every element, oldest first.
    mutating func takeAll() -> [Element] {
        let elements = Array(storage[head...])
        removeAll()
        return elements
    }

    @inline(__always)
    mutating func removeAll() {
        storage = []
        head = 0
    }
}

extension Optional {
    /// Returns the wrapped value and leaves `nil` behind, as OpenCombine's `take()` does.
    @inline(__always)
    internal mutating func take() -> Wrapped? {
        let value = self
        self = nil
        return value
    }
}
