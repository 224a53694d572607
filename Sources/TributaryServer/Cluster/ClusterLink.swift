import Aggregation
import EventLoop
import HTTPServer

/// How any worker of the process reaches its ``ClusterAgent`` (on the process's own loop).
struct ClusterLink: Sendable {
    let agent: LoopBound<ClusterAgent>

    func forward(
        _ control: StreamControl, to id: StreamID, by subject: String? = nil, answeringOn loop: EventLoop,
        _ answer: @escaping @Sendable (Result<Void, HTTPError>) -> Void
    ) {
        let agent = self.agent
        agent.loop.execute {
            agent.value.forward(control, to: id, by: subject) { outcome in loop.execute { answer(outcome) } }
        }
    }

    func streamOpened(_ id: StreamID) {
        let agent = self.agent
        agent.loop.execute { agent.value.streamOpened(id) }
    }

    func streamClosed(_ id: StreamID) {
        let agent = self.agent
        agent.loop.execute { agent.value.streamClosed(id) }
    }

    /// Reloads the pipelines `aim` names on every replica.
    func reload(_ aim: ReloadAim) {
        let agent = self.agent
        agent.loop.execute { agent.value.reload(aim.resource, matching: aim.values) }
    }

    /// Stops sharing resource `name` (a reload removed or changed it).
    func release(_ name: String) {
        let agent = self.agent
        agent.loop.execute { agent.value.release(name) }
    }

    /// Leaves the fleet (shutdown).
    func leave() {
        let agent = self.agent
        agent.loop.execute { agent.value.leave() }
    }
}
