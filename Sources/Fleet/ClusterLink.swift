package import Aggregation
package import EventLoop
package import HTTPServer

/// How any worker of the process reaches its ``ClusterAgent`` (on the process's own loop).
package struct ClusterLink: Sendable {
    package let agent: LoopBound<ClusterAgent>

    package init(agent: LoopBound<ClusterAgent>) {
        self.agent = agent
    }

    package func forward(
        _ control: StreamControl, to id: StreamID, by subject: String? = nil, answeringOn loop: EventLoop,
        _ answer: @escaping @Sendable (Result<Void, HTTPError>) -> Void
    ) {
        let agent = self.agent
        agent.loop.execute {
            agent.value.forward(control, to: id, by: subject) { outcome in loop.execute { answer(outcome) } }
        }
    }

    package func streamOpened(_ id: StreamID) {
        let agent = self.agent
        agent.loop.execute { agent.value.streamOpened(id) }
    }

    package func streamClosed(_ id: StreamID) {
        let agent = self.agent
        agent.loop.execute { agent.value.streamClosed(id) }
    }

    /// Reloads the pipelines `aim` names on every replica.
    package func reload(_ aim: ReloadAim) {
        let agent = self.agent
        agent.loop.execute { agent.value.reload(aim.resource, matching: aim.values) }
    }

    /// Stops sharing resource `name` (a reload removed or changed it).
    package func release(_ name: String) {
        let agent = self.agent
        agent.loop.execute { agent.value.release(name) }
    }

    /// Leaves the fleet (shutdown).
    package func leave() {
        let agent = self.agent
        agent.loop.execute { agent.value.leave() }
    }
}
