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
        .library(name: "Libevent", targets: ["Libevent"]),
    ],
    dependencies: [
        .package(url: "https://github.com/OpenCombine/OpenCombine", from: "0.14.0"),
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

        // MARK: - Test support and tests

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
    ]
)
