/// What `Benchmarks/AuthBench` measures of ``TokenVerifier``, reached through an SPI so the
/// benchmark runs the service's own code in a release build: a token verified from scratch
/// (parsed, its signature checked, its claims read: what every new token costs) and one
/// found among the verified tokens (what a steady client's next request costs).
@_spi(Benchmarks) public enum TokenVerificationBenchmark {
    /// Nanoseconds per verification of each of `tokens` (all valid for `configuration`'s
    /// `auth.jwt`): cold, `rounds` times each; then cached, `rounds` times each.
    public static func measure(_ configuration: Configuration, tokens: [String], rounds: Int) async throws -> (cold: Double, cached: Double) {
        guard let jwt = configuration.auth.jwt else { return (0, 0) }
        let verified = VerifiedTokens()
        let keys = TokenKeys(expectsJWKS: false)
        keys.setConfigured(try await TokenKeys.make(jwt.keys))
        let verifier = TokenVerifier(settings: jwt, keys: keys, tokens: verified, hasher: IdentityHasher(), refetch: nil)
        let clock = ContinuousClock()
        let now = TokenVerifier.now()
        var accepted = 0
        let cold = clock.measure {
            for _ in 0..<rounds {
                for token in tokens {
                    if case .verified(let credential) = verifier.check(token, now: now) {
                        accepted += 1
                        verified.keep(credential, for: token, now: now)
                    }
                }
            }
        }
        let cached = clock.measure {
            for _ in 0..<rounds {
                for token in tokens where verified.credential(for: token, now: now) != nil { accepted += 1 }
            }
        }
        guard accepted == 2 * rounds * tokens.count else { throw BenchmarkError() }
        let count = Double(rounds * tokens.count)
        return (nanoseconds(cold) / count, nanoseconds(cached) / count)
    }

    /// A token the verifier refused: the benchmark measured nothing.
    struct BenchmarkError: Error {}

    private static func nanoseconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) * 1e9 + Double(attoseconds) / 1e9
    }
}
