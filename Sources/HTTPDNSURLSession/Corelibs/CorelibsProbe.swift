import Foundation

/// Objects of a platform made for the install check, each with what it must read as.
package struct CorelibsProbe {
    /// What an upload body must read as.
    package enum Body: Equatable {
        case none
        case data(Data)
        case file(URL)
        /// Any stream.
        case stream
    }

    /// One task of ``session``, not resumed.
    package struct Task {
        /// An instance of the platform's task class.
        package var object: AnyObject
        /// Its key in the session's task registry (`taskIdentifier`).
        package var identifier: Int
        /// Its `knownBody`.
        package var body: Body
        /// How it reports (its behaviour in the registry).
        package var reporting: CorelibsReporting

        package init(object: AnyObject, identifier: Int, body: Body, reporting: CorelibsReporting) {
            self.object = object
            self.identifier = identifier
            self.body = body
            self.reporting = reporting
        }
    }

    /// An instance of the platform's session class, owning ``tasks``.
    package var session: AnyObject
    /// At least one task per body and per reporting the route reads.
    package var tasks: [Task]
    /// A request value (of the platform's request type) whose timeout was given to its initializer.
    package var requestWithoutTimeout: Any
    /// A request value whose timeout was assigned.
    package var requestWithTimeout: Any
    /// Ends what the probe holds (the session is invalidated).
    package var close: () -> Void

    package init(
        session: AnyObject, tasks: [Task], requestWithoutTimeout: Any, requestWithTimeout: Any, close: @escaping () -> Void
    ) {
        self.session = session
        self.tasks = tasks
        self.requestWithoutTimeout = requestWithoutTimeout
        self.requestWithTimeout = requestWithTimeout
        self.close = close
    }
}
