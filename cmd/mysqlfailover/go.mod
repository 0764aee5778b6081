module github.com/mysqlfailover/mysqlfailover/cmd/mysqlfailover

go 1.24.0

replace github.com/mysqlfailover/mysqlfailover => ../../

require (
	github.com/go-sql-driver/mysql v1.10.1
	github.com/mysqlfailover/mysqlfailover v0.0.0-00010101000000-000000000000
)

require filippo.io/edwards25519 v1.2.0 // indirect
