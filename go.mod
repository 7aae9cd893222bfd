module github.com/recourse-dev/recourse

go 1.26

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/stretchr/testify v1.11.1 // indirect
	go.uber.org/goleak v1.3.0 // indirect
)
