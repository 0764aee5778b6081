module github.com/mysqlfailover/mysqlfailover

go 1.24.0

require (
	github.com/DATA-DOG/go-sqlmock v1.5.2
	github.com/go-sql-driver/mysql v1.10.1
	go.uber.org/goleak v1.3.0
)

require filippo.io/edwards25519 v1.2.0 // indirect
