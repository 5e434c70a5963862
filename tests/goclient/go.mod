// The module of the Go client test (cmd/almoner/e2e TestClientGo): the
// flows of main.go over the published client, clients/go, as an
// integrator's module would use it (GOWORK=off).
module almoner.test/goclient

go 1.26.0

require github.com/almoner/almoner/clients/go v0.0.0

replace github.com/almoner/almoner/clients/go => ../../clients/go

require (
	github.com/apapsch/go-jsonmerge/v2 v2.0.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/oapi-codegen/runtime v1.9.0 // indirect
)
