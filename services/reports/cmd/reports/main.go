// Command reports runs the reports service alone, as Kubernetes does; see
// `almoner serve --target=reports` for the same from the one binary.
package main

import (
	"github.com/almoner/almoner/pkg/service"
	"github.com/almoner/almoner/services/reports"
)

func main() { service.Main(reports.Module) }
