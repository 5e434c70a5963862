// Command webhooks runs the webhooks service (API and dispatcher) alone, as
// Kubernetes does; see `almoner serve --target=webhooks` for the same from
// the one binary. It needs the auth service's address (ALMONER_AUTH_ADDR)
// to read tenants' webhooks:enabled flag.
package main

import (
	"github.com/almoner/almoner/pkg/service"
	"github.com/almoner/almoner/services/webhooks"
)

func main() { service.Main(webhooks.Module) }
