// Command contacts runs the contacts service alone, as Kubernetes does; see
// `almoner serve --target=contacts` for the same from the one binary.
package main

import (
	"github.com/almoner/almoner/pkg/service"
	"github.com/almoner/almoner/services/contacts"
)

func main() { service.Main(contacts.Module) }
