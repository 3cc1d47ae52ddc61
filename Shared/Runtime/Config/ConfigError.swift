/// A configuration value that cannot be used. The description names the variable and says what
/// is wrong with it; it never repeats the value of a variable that may hold a secret.
public struct ConfigError: Error, CustomStringConvertible, Equatable {
    public let variable: String
    public let problem: String

    public init(variable: String, problem: String) {
        self.variable = variable
        self.problem = problem
    }

    public var description: String { "\(variable): \(problem)" }
}
