// Command auth runs the auth service alone, as Kubernetes does; see
// `almoner serve --target=auth` for the same from the one binary.
package main

import (
	"github.com/almoner/almoner/pkg/service"
	"github.com/almoner/almoner/services/auth"
)

func main() { service.Main(auth.Module) }
