// swift-tools-version: 6.1
import PackageDescription

/// Every target of ours is built in the Swift 6 language mode with these upcoming features.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Tributary",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "Rivers", targets: ["Rivers"]),
        .library(name: "Libevent", targets: ["Libevent"]),
    ],
    dependencies: [
        .package(url: "https://github.com/OpenCombine/OpenCombine", from: "0.14.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
    ],
    targets: [
        // MARK: - libevent

        .systemLibrary(
            name: "CLibevent",
            pkgConfig: "libevent",
            providers: [.apt(["libevent-dev", "libssl-dev"])]
        ),
        .target(
            name: "Libevent",
            dependencies: [
                "CLibevent",
                .product(name: "OpenCombine", package: "OpenCombine"),
            ],
            swiftSettings: strictSettings
        ),

        // MARK: - Rivers: the reactive toolbox

        .target(
            name: "Rivers",
            dependencies: [.product(name: "OpenCombine", package: "OpenCombine")],
            swiftSettings: strictSettings
        ),

        .executableTarget(
            name: "RiversBenchmarks",
            dependencies: ["Rivers", .product(name: "OpenCombine", package: "OpenCombine")],
            path: "Benchmarks/RiversBenchmarks",
            swiftSettings: strictSettings
        ),

        // MARK: - Test support and tests

        .target(
            name: "RiversTesting",
            dependencies: ["Rivers", .product(name: "OpenCombine", package: "OpenCombine")],
            swiftSettings: strictSettings
        ),
        .target(
            name: "TributaryTesting",
            dependencies: ["Libevent", .product(name: "OpenCombine", package: "OpenCombine")],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "LibeventTests",
            dependencies: [
                "Libevent", "TributaryTesting",
                .product(name: "OpenCombine", package: "OpenCombine"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "RiversTests",
            dependencies: [
                "Rivers", "RiversTesting",
                .product(name: "OpenCombine", package: "OpenCombine"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            swiftSettings: strictSettings
        ),
    ]
)
