import AppStore
import Crypto
import Foundation

extension CommandRunner {
    /// Runs an App Store command: reads the JWS and the trust anchors, verifies, prints the
    /// report, and throws `refused` with the first refusal's code when anything was refused.
    func run(_ command: AppleCommand, standardInput: () -> String) throws(SubctlError) {
        switch command {
        case .verify(let options):
            let jws = try Self.jws(options.source, standardInput: standardInput)
            var anchors: [X509Certificate] = []
            for path in options.rootPaths { anchors += try Self.anchors(path, option: "--root") }
            // The service's defaults, so that `valid` here means the service accepts the data.
            let configuration = AppleSignedDataVerifier.Configuration(
                bundleID: options.bundleID, environment: options.environment, appAppleID: options.appAppleID)
            let verifier: AppleSignedDataVerifier
            do {
                verifier = try AppleSignedDataVerifier(anchors: anchors, configuration: configuration)
            } catch let error as AppleVerificationError {
                throw SubctlError(.usage, error.message)
            } catch {
                throw SubctlError(.invalidArgument, "the trust anchors cannot be used: \(error)")
            }
            let report = AppleVerificationReport.make(jws: jws, kind: options.kind, verifier: verifier, now: now())
            OutputText.apple(report).forEach(write)
            if let (_, error) = report.refusal, let message = report.refusalMessage {
                throw SubctlError(.refused(error.code), message)
            }
        }
    }

    /// The JWS text from where `source` says, without surrounding white space.
    private static func jws(_ source: AppleVerifyOptions.Source, standardInput: () -> String) throws(SubctlError)
        -> String
    {
        let text: String
        switch source {
        case .argument(let jws): text = jws
        case .standardInput: text = standardInput()
        case .file(let path):
            do {
                text = String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
            } catch {
                throw SubctlError(.invalidArgument, "cannot read --file \(path): \(error.localizedDescription)")
            }
        }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The certificates of a trust anchor file (`option` names it in errors): PEM (every
    /// certificate in it) when it holds a PEM header, else one DER certificate.
    static func anchors(_ path: String, option: String) throws(SubctlError) -> [X509Certificate] {
        let bytes: [UInt8]
        do {
            bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw SubctlError(.invalidArgument, "cannot read \(option) \(path): \(error.localizedDescription)")
        }
        do {
            if String(decoding: bytes, as: UTF8.self).contains("-----BEGIN") {
                return try X509Certificate.loadPEMChain(path: path)
            }
            return [try X509Certificate(der: bytes)]
        } catch {
            throw SubctlError(.invalidArgument, "\(option) \(path) is not a DER or PEM certificate: \(error.message)")
        }
    }
}
