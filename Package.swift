// swift-tools-version:6.1
import PackageDescription

/// Settings every Swift target shares: Swift 6 mode with complete strict concurrency and the
/// upcoming features that keep imports and existentials explicit.
let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableExperimentalFeature("StrictConcurrency=complete"),
]

/// For the modules on the request path (frames, envelopes, the entitlement view): release builds
/// leave out the run-time exclusivity checks, which cost a thread-local lookup on every access
/// to a class's stored property (several per call). Debug builds, and so the tests, keep them.
let hotPathSettings: [SwiftSetting] =
    swiftSettings + [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]

/// Shared/'s layers: the C libraries and their small shims, the runtime every service runs on
/// (sockets, RPC, HTTP, configuration, logs and metrics, crypto), the wire protocol (frames,
/// generated messages, JSON), storage engines, and the domain model.
enum Layer: String {
    case runtime = "Runtime"
    case wire = "Protocol"
    case storage = "Storage"
    case domain = "Domain"
}

/// A Swift library target under Shared/<layer>/.
func shared(_ name: String, _ layer: Layer, _ deps: [Target.Dependency], hotPath: Bool = false) -> Target {
    .target(
        name: name, dependencies: deps, path: "Shared/\(layer.rawValue)/\(name)",
        swiftSettings: hotPath ? hotPathSettings : swiftSettings)
}

/// A C library reached through pkg-config, installed from Debian's package of that name.
func system(_ name: String, pkgConfig: String?, apt: String) -> Target {
    .systemLibrary(name: name, path: "Shared/C/\(name)", pkgConfig: pkgConfig, providers: [.apt([apt])])
}

let package = Package(
    name: "subscriptions",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "verifier", targets: ["verifier"]),
        .executable(name: "ledger", targets: ["ledger"]),
        .executable(name: "entitlement", targets: ["entitlement"]),
        .executable(name: "subctl", targets: ["subctl"]),
    ],
    targets: [
        // C libraries.
        system("CProtobufC", pkgConfig: "libprotobuf-c", apt: "libprotobuf-c-dev"),
        system("COpenSSL", pkgConfig: "openssl", apt: "libssl-dev"),
        system("CSQLite", pkgConfig: "sqlite3", apt: "libsqlite3-dev"),
        system("CLibPQ", pkgConfig: "libpq", apt: "libpq-dev"),
        system("CMicroHTTPD", pkgConfig: "libmicrohttpd", apt: "libmicrohttpd-dev"),
        system("CZlib", pkgConfig: "zlib", apt: "zlib1g-dev"),
        // Small C functions for what Swift cannot import (macros, variadics, epoll).
        .target(
            name: "CShims", dependencies: ["COpenSSL", "CMicroHTTPD"], path: "Shared/C/CShims",
            linkerSettings: [.linkedLibrary("gnutls")]),
        // protoc-c output for proto/ (generated, do not edit; scripts/generate-proto).
        .target(
            name: "CProto", dependencies: ["CProtobufC"], path: "Shared/C/CProto", exclude: ["README.md"],
            cSettings: [.headerSearchPath("include")]),

        // Swift modules shared by the services.
        shared("Observability", .runtime, []),
        shared("Config", .runtime, ["Sockets"]),
        shared("Model", .domain, []),
        shared("Wire", .wire, ["CProto", "CProtobufC", "Model"], hotPath: true),
        shared("Crypto", .runtime, ["COpenSSL", "CShims"]),
        shared("Sockets", .runtime, []),
        shared("HTTP", .runtime, ["CMicroHTTPD", "CShims", "Observability", "Sockets"]),
        shared("HTTPClient", .runtime, ["CShims", "Observability", "Sockets"]),
        shared(
            "RPC", .runtime, ["Wire", "Model", "Config", "COpenSSL", "CShims", "Crypto", "Observability", "Sockets"],
            hotPath: true),
        shared("Lifecycle", .runtime, ["Observability"]),
        shared("SQLite", .storage, ["CSQLite"]),
        shared("PostgreSQL", .storage, ["CLibPQ"]),
        shared("ProtoJSON", .wire, ["Wire", "Observability"]),
        // Each service's typed client over any transport (generated, do not edit; scripts/generate-proto).
        shared("Clients", .wire, ["RPC", "Wire", "Model"]),
        shared("Connect", .runtime, ["RPC", "Wire", "HTTP", "ProtoJSON", "Crypto", "Observability", "CZlib"]),
        shared(
            "ServiceRuntime", .runtime,
            ["RPC", "Wire", "HTTP", "Connect", "Config", "Observability", "Lifecycle", "Sockets"]),

        // Services: business rules in a library, a main.swift that only wires it up.
        // Each store's API client is a library of its own (subctl and the simulator use them too);
        // its adapter, which turns what the store says into ledger facts, is part of the verifier.
        .target(
            name: "AppStore", dependencies: ["Crypto", "Model", "HTTPClient"], path: "Services/Stores/AppStore/Client",
            swiftSettings: swiftSettings),
        .target(
            name: "GooglePlay", dependencies: ["Crypto", "Model", "HTTPClient"],
            path: "Services/Stores/GooglePlay/Client",
            swiftSettings: swiftSettings),
        .target(
            name: "VerifierService",
            dependencies: [
                "HTTPClient", "ServiceRuntime", "RPC", "Wire", "Clients", "Model", "Config", "Observability",
                "Lifecycle",
                "HTTP", "Crypto", "AppStore", "GooglePlay",
            ],
            // The service, and each store's adapter beside that store's client.
            path: "Services",
            exclude: [
                "Containerfile", "Entitlement", "Ledger", "Subctl", "Verifier/verifier", "Stores/AppStore/Client",
                "Stores/GooglePlay/Client",
            ],
            sources: ["Verifier/VerifierService", "Stores/AppStore/Adapter", "Stores/GooglePlay/Adapter"],
            swiftSettings: swiftSettings),
        .executableTarget(
            name: "verifier", dependencies: ["VerifierService", "ServiceRuntime"], path: "Services/Verifier/verifier",
            swiftSettings: swiftSettings),
        .target(
            name: "LedgerService",
            dependencies: [
                "ServiceRuntime", "RPC", "Wire", "Model", "Config", "Observability", "Lifecycle", "SQLite",
                "PostgreSQL",
                "Crypto", "HTTP",
            ],
            path: "Services/Ledger/LedgerService", swiftSettings: swiftSettings),
        .executableTarget(
            name: "ledger", dependencies: ["LedgerService", "ServiceRuntime"], path: "Services/Ledger/ledger",
            swiftSettings: swiftSettings),
        .target(
            name: "EntitlementService",
            dependencies: [
                "ServiceRuntime", "RPC", "Wire", "Model", "Config", "Observability", "Crypto", "HTTPClient",
                "ProtoJSON",
                // CheckAccess's answer is packed by protobuf-c from the view's C strings, in place.
                "CProto",
            ],
            path: "Services/Entitlement/EntitlementService", swiftSettings: hotPathSettings),
        .executableTarget(
            name: "entitlement", dependencies: ["EntitlementService", "ServiceRuntime"],
            path: "Services/Entitlement/entitlement", swiftSettings: swiftSettings),

        // The operator's command-line client.
        .target(
            name: "SubctlKit",
            dependencies: [
                "Wire", "ProtoJSON", "RPC", "Config", "Observability", "Model", "AppStore", "Crypto", "Sockets",
                "Lifecycle",
                // `subctl console`: the support console's web server, on the operator's machine.
                "HTTP", "HTTPClient",
                // Its payload page holds a recorded Pub/Sub push to what the verifier accepts.
                "GooglePlay",
            ],
            path: "Services/Subctl/SubctlKit", swiftSettings: swiftSettings),
        .executableTarget(
            name: "subctl", dependencies: ["SubctlKit", "RPC", "Lifecycle"], path: "Services/Subctl/subctl",
            swiftSettings: swiftSettings),

        // The store simulator (a development and test tool): App Store and Google Play with a
        // clock of their own, for the end-to-end tests and the demo.
        .target(
            name: "StoreSimKit",
            dependencies: ["AppStore", "Config", "Crypto", "HTTP", "HTTPClient", "Model", "Observability", "Sockets"],
            path: "Tests/StoreSim/StoreSimKit", swiftSettings: swiftSettings),
        .executableTarget(
            name: "storesim", dependencies: ["StoreSimKit"],
            path: "Tests/StoreSim/storesim", swiftSettings: swiftSettings),
        .executableTarget(
            name: "demo", dependencies: ["RPC", "Wire", "Model", "Config", "Sockets", "ServiceProcessKit"],
            path: "Tests/StoreSim/demo",
            swiftSettings: swiftSettings),

        // Benchmarks (not tests): make bench-rpc, make bench-ledger, make bench-apple, make bench-entitlement.
        .target(
            name: "BenchSupport", dependencies: ["Wire", "CShims"], path: "Tests/Benchmarks/BenchSupport",
            swiftSettings: swiftSettings),
        .executableTarget(
            name: "rpcbench", dependencies: ["Wire", "CShims", "BenchSupport"],
            path: "Tests/Benchmarks/rpcbench", swiftSettings: swiftSettings),
        .executableTarget(
            name: "ledgerbench", dependencies: ["RPC", "Wire", "Model", "Config", "BenchSupport"],
            path: "Tests/Benchmarks/ledgerbench",
            swiftSettings: swiftSettings),
        .executableTarget(
            name: "applebench", dependencies: ["AppStore", "Crypto", "BenchSupport"],
            path: "Tests/Benchmarks/applebench", swiftSettings: swiftSettings),
        .executableTarget(
            name: "entitlementbench", dependencies: ["Wire", "Model", "SQLite", "BenchSupport"],
            path: "Tests/Benchmarks/entitlementbench", swiftSettings: swiftSettings),
        .executableTarget(
            name: "webhookbench",
            dependencies: [
                "BenchSupport", "EntitlementService", "HTTP", "RPC", "Wire", "Model", "Observability", "Sockets",
                "ProtoJSON",
            ],
            path: "Tests/Benchmarks/webhookbench", swiftSettings: swiftSettings),
        .executableTarget(
            name: "ingestbench", dependencies: ["BenchSupport", "HTTP", "HTTPClient", "Observability"],
            path: "Tests/Benchmarks/ingestbench", swiftSettings: swiftSettings),

        // The generator of Shared/Protocol/Wire/Generated from proto/'s descriptor set (scripts/generate-proto).
        .executableTarget(
            name: "wiregen", dependencies: ["Observability"], path: "scripts/wiregen", swiftSettings: swiftSettings),

        // Tests, and what several test targets share.
        // libFuzzer targets (scripts/fuzz; built with -sanitize=fuzzer).
        .executableTarget(
            name: "fuzz", dependencies: ["Wire", "AppStore", "GooglePlay", "EntitlementService", "HTTP", "Crypto"],
            path: "Tests/Fuzz", exclude: ["corpus", "AppleRootCA-G3.pem"], swiftSettings: swiftSettings),
        .target(
            name: "ServiceProcessKit", dependencies: ["CSpawnShims"], path: "Tests/ServiceProcessKit",
            swiftSettings: swiftSettings),
        .target(name: "CSpawnShims", path: "Tests/CSpawnShims"),
        .target(
            name: "TestSupport", dependencies: ["Crypto", "Model", "ServiceProcessKit"], path: "Tests/TestSupport",
            swiftSettings: swiftSettings),
        .testTarget(
            name: "WireTests", dependencies: ["Wire", "Model"], path: "Tests/WireTests", exclude: ["Golden"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "CryptoTests", dependencies: ["Crypto", "TestSupport", "ServiceProcessKit"],
            path: "Tests/CryptoTests",
            swiftSettings: swiftSettings),
        .testTarget(
            name: "RPCTests",
            dependencies: [
                "RPC", "Wire", "Model", "Crypto", "Observability", "Lifecycle", "Sockets", "TestSupport",
                "ServiceProcessKit",
            ],
            path: "Tests/RPCTests", swiftSettings: swiftSettings),
        .testTarget(
            name: "HTTPTests", dependencies: ["HTTP", "Observability"], path: "Tests/HTTPTests",
            swiftSettings: swiftSettings),
        .testTarget(
            name: "HTTPClientTests", dependencies: ["HTTPClient", "HTTP", "Observability", "TestSupport"],
            path: "Tests/HTTPClientTests", swiftSettings: swiftSettings),
        .testTarget(
            name: "ServiceRuntimeTests",
            dependencies: ["ServiceRuntime", "RPC", "Wire", "Config", "Lifecycle", "Observability", "Sockets"],
            path: "Tests/ServiceRuntimeTests", swiftSettings: swiftSettings),
        .testTarget(
            name: "LedgerTests",
            dependencies: [
                "LedgerService", "Wire", "Model", "RPC", "Config", "SQLite", "PostgreSQL", "Observability",
                "ServiceProcessKit", "TestSupport",
            ],
            path: "Tests/LedgerTests", swiftSettings: swiftSettings),
        .testTarget(
            name: "SQLiteTests", dependencies: ["SQLite"], path: "Tests/SQLiteTests", swiftSettings: swiftSettings),
        .testTarget(
            name: "ConfigTests", dependencies: ["Config", "Sockets"], path: "Tests/ConfigTests",
            swiftSettings: swiftSettings),
        .testTarget(
            name: "ConnectTests",
            dependencies: ["Connect", "RPC", "Wire", "HTTP", "Crypto", "Observability", "TestSupport"],
            path: "Tests/ConnectTests", swiftSettings: swiftSettings),
        .testTarget(
            name: "ProtoJSONTests", dependencies: ["ProtoJSON", "Wire", "Model"], path: "Tests/ProtoJSONTests",
            swiftSettings: swiftSettings),
        .testTarget(
            name: "SubctlTests",
            dependencies: [
                "SubctlKit", "ProtoJSON", "Wire", "Model", "AppStore", "Crypto", "Sockets", "RPC", "TestSupport",
                "Lifecycle", "HTTP",
            ],
            path: "Tests/SubctlTests",
            swiftSettings: swiftSettings),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "RPC", "Wire", "Connect", "ProtoJSON", "Config", "Crypto", "Model", "Sockets", "TestSupport",
                "EntitlementService", "Observability", "HTTP", "SQLite", "LedgerService", "VerifierService",
                "ServiceRuntime", "Lifecycle", "ServiceProcessKit",
            ],
            path: "Tests/EndToEndTests",
            swiftSettings: swiftSettings),
        .testTarget(
            name: "PostgreSQLTests", dependencies: ["PostgreSQL"], path: "Tests/PostgreSQLTests",
            swiftSettings: swiftSettings),
        .testTarget(
            name: "AppStoreTests",
            dependencies: [
                "HTTPClient", "AppStore", "Crypto", "Model", "HTTP", "Observability", "TestSupport",
                "ServiceProcessKit",
            ],
            path: "Tests/AppStoreTests",
            swiftSettings: swiftSettings),
        .testTarget(
            name: "GooglePlayTests",
            dependencies: ["HTTPClient", "GooglePlay", "Crypto", "Model", "HTTP", "Observability", "TestSupport"],
            path: "Tests/GooglePlayTests", swiftSettings: swiftSettings),
        .testTarget(
            name: "VerifierTests",
            dependencies: [
                "HTTPClient", "VerifierService", "AppStore", "GooglePlay", "Crypto", "Model", "Wire", "RPC", "Config",
                "HTTP", "Observability", "Sockets", "SQLite", "TestSupport", "Clients", "LedgerService", "Lifecycle",
                "ServiceRuntime", "Connect",
            ],
            path: "Tests/VerifierTests", swiftSettings: swiftSettings),
        .testTarget(
            name: "LedgerProcessTests",
            dependencies: ["RPC", "Wire", "Model", "Config", "SQLite", "PostgreSQL", "Sockets", "TestSupport"],
            path: "Tests/LedgerProcessTests", swiftSettings: swiftSettings),
        .testTarget(
            name: "StoreSimTests",
            dependencies: [
                "HTTPClient", "StoreSimKit", "AppStore", "GooglePlay", "Crypto", "HTTP", "Observability", "TestSupport",
            ],
            path: "Tests/StoreSimTests", swiftSettings: swiftSettings),
        .testTarget(
            name: "EntitlementTests",
            dependencies: [
                "EntitlementService", "Model", "Config", "Lifecycle", "ServiceRuntime", "TestSupport",
                "ServiceProcessKit",
            ],
            path: "Tests/EntitlementTests", swiftSettings: swiftSettings),
    ]
)
