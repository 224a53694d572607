module tributary/benchmarks/load

go 1.19
