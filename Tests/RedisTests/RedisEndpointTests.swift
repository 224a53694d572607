import Redis
import Testing

@Suite("redis:// URLs")
struct RedisEndpointTests {
    @Test("accepted values: IPv4, IPv6 in brackets, host names, default port and database, passwords")
    func accepted() throws {
        let cases: [(String, RedisEndpoint)] = [
            ("redis://127.0.0.1:6379", RedisEndpoint(host: "127.0.0.1")),
            ("redis://127.0.0.1", RedisEndpoint(host: "127.0.0.1")),
            ("REDIS://10.0.0.5:6380/2", RedisEndpoint(host: "10.0.0.5", port: 6380, database: 2)),
            ("redis://[::1]:7000", RedisEndpoint(host: "::1", port: 7000)),
            ("redis://[fe80::1]", RedisEndpoint(host: "fe80::1")),
            ("redis://cache.internal:1/15", RedisEndpoint(host: "cache.internal", port: 1, database: 15)),
            ("redis://localhost:65535/", RedisEndpoint(host: "localhost", port: 65535)),
            ("redis://:s3cret@redis-1:6379", RedisEndpoint(host: "redis-1", password: "s3cret")),
            ("redis://fleet:p%40ss%3Aword@redis-1/1", RedisEndpoint(host: "redis-1", database: 1, username: "fleet", password: "p@ss:word")),
            ("redis://:a@b@host", RedisEndpoint(host: "host", password: "a@b")),
        ]
        for (url, expected) in cases {
            #expect(try RedisEndpoint(url) == expected, "\(url)")
        }
    }

    @Test("rejected values say what is wrong and quote the value, password hidden")
    func rejected() {
        let cases: [(String, String)] = [
            ("redis://x:99999", #""redis://x:99999": the port must be 1…65535"#),
            ("redis://x:0", #""redis://x:0": the port must be 1…65535"#),
            ("redis://x:", #""redis://x:": the port must be 1…65535"#),
            ("redis://x:63a", #""redis://x:63a": the port must be 1…65535"#),
            ("127.0.0.1:6379", #""127.0.0.1:6379": must start with redis://, as in redis://127.0.0.1:6379"#),
            ("http://127.0.0.1:6379", #""http://127.0.0.1:6379": must start with redis://, as in redis://127.0.0.1:6379"#),
            ("rediss://host:6379", #""rediss://host:6379": TLS (rediss://) is not supported: use redis://"#),
            ("redis://", #""redis://": has no host"#),
            ("redis://:6379", #""redis://:6379": has no host"#),
            ("redis://::1:6379", #""redis://::1:6379": an IPv6 address goes in brackets, as in redis://[::1]:6379"#),
            ("redis://[::g]:6379", #""redis://[::g]:6379": [::g] is not an IPv6 address"#),
            ("redis://[::1:6379", #""redis://[::1:6379": the IPv6 address has no closing ]"#),
            ("redis://999.0.0.1", #""redis://999.0.0.1": 999.0.0.1 is not an IPv4 address"#),
            ("redis://bad_host", #""redis://bad_host": bad_host is not a valid host name"#),
            ("redis://-x.example", #""redis://-x.example": -x.example is not a valid host name"#),
            ("redis://host/db1", #""redis://host/db1": the database must be a number, as in redis://host:6379/0"#),
            ("redis://host/1/2", #""redis://host/1/2": the database must be a number, as in redis://host:6379/0"#),
            ("redis://host?db=1", #""redis://host?db=1": must not have a query or fragment"#),
            ("redis://host 1", #""redis://host 1": must not contain spaces or control characters"#),
            ("redis://secret@host", #""redis://secret@host": a password goes after a colon, as in redis://:PASSWORD@host or redis://USER:PASSWORD@host"#),
            ("redis://:@host", #""redis://:***@host": the password is empty"#),
            ("redis://:s3cret@host:99999", #""redis://:***@host:99999": the port must be 1…65535"#),
            ("redis://:bad%zzsecret@host", #""redis://:***@host": the password has a broken percent escape (use %XX)"#),
        ]
        for (url, message) in cases {
            #expect(throws: RedisEndpointError.self, "\(url)") { try RedisEndpoint(url) }
            do {
                _ = try RedisEndpoint(url)
            } catch {
                #expect(error.description == message)
            }
        }
    }

    @Test("the description hides the password")
    func description() throws {
        #expect(try RedisEndpoint("redis://:s3cret@10.0.0.5:6380/2").description == "redis://:***@10.0.0.5:6380/2")
        #expect(try RedisEndpoint("redis://[::1]").description == "redis://[::1]:6379")
    }
}
