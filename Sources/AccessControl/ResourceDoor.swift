package import HTTPServer

/// The ``AccessGate`` as one resource's routes on one worker use it, with the resource's
/// ``AccessPolicy`` (a reload sets a new one in place). A resource open to all (no token
/// read, no limit) serves its requests at once, without a closure or a lookup.
///
/// ```swift
/// guard door.isOpen else { return door.admit(request) { credential in serve(request, as: credential) } }
/// serve(request, as: nil)
/// ```
package final class ResourceDoor {
    let gate: AccessGate
    package var policy: AccessPolicy {
        didSet { isOpen = gate.isOpen(policy) }
    }
    /// Whether requests go through without the gate.
    package private(set) var isOpen: Bool

    package init(gate: AccessGate, policy: AccessPolicy) {
        self.gate = gate
        self.policy = policy
        isOpen = gate.isOpen(policy)
    }

    /// Serves `request` once the gate admits it (its answer is the gate's otherwise).
    package func admit(_ request: ServerRequest, then serve: @escaping (Credential?) -> Void) {
        gate.admit(request, policy, then: serve)
    }
}
