// Command orders runs the orders service alone, as Kubernetes does; see
// `almoner serve --target=orders` for the same from the one binary.
package main

import (
	"github.com/almoner/almoner/pkg/service"
	"github.com/almoner/almoner/services/orders"
)

func main() { service.Main(orders.Module) }
