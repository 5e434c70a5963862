// Command inventory runs the inventory service alone, as Kubernetes does;
// see `almoner serve --target=inventory` for the same from the one binary.
// It needs the auth service's address (ALMONER_AUTH_ADDR) to read tenants'
// default currencies.
package main

import (
	"github.com/almoner/almoner/pkg/service"
	"github.com/almoner/almoner/services/inventory"
)

func main() { service.Main(inventory.Module) }
