/// The paths `TestPKI.write` produced.
public struct TestPKIFiles: Sendable {
    /// One identity's certificate and key.
    public struct Identity: Sendable {
        /// The name given to `TestPKI.write` (the commonName and first DNS name).
        public let name: String
        /// `<directory>/<name>.pem`: the identity's certificate.
        public let certificatePath: String
        /// `<directory>/<name>.key`: the identity's PKCS#8 private key (mode 0600).
        public let keyPath: String
    }

    /// The folder holding the files.
    public let directory: String
    /// `<directory>/ca.pem`: the CA certificate that signed every identity.
    public let caCertificatePath: String
    /// The identities, in the order they were requested.
    public let identities: [Identity]

    /// The identity called `name`, if one was written.
    public subscript(name: String) -> Identity? {
        identities.first { $0.name == name }
    }
}
