/// The configuration Tributary ships with, `config/tributary.yaml`, compiled into the binary so
/// that `tributary demo` runs from any directory with no file beside it.
///
/// `shipped.yaml` in this folder is a symbolic link to `config/tributary.yaml`, which stays the
/// one file to edit: SwiftPM embeds a target's resources only from the target's own folder, and
/// it reads through the link (Package.swift, `.embedInCode`). The binary uses it only when
/// nothing else names a configuration (see `ServeOptions.load` in the `tributary` command).
///
/// ```swift
/// let configuration = try Configuration.load(yaml: ShippedConfiguration.yaml, file: ShippedConfiguration.name)
/// ```
public enum ShippedConfiguration {
    /// What error messages and logs call it, in place of a file path.
    public static let name = "built-in config/tributary.yaml"

    /// The text of `config/tributary.yaml` as it was when the binary was built.
    public static let yaml = String(decoding: PackageResources.shipped_yaml, as: UTF8.self)
}
