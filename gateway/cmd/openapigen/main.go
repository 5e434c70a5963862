// Command openapigen writes the published OpenAPI 3.1 document from the
// routed RPCs' descriptors and protoc-gen-openapiv2's Swagger 2.0 output:
//
//	go run ./cmd/openapigen -swagger <almoner.swagger.json> -out openapi/openapi.json
//
// `make generate` runs it after buf (internal/openapigen says how).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/almoner/almoner/gateway/internal/openapigen"
	// The routed services' descriptors, as the gateway links them.
	_ "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	_ "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	_ "github.com/almoner/almoner/pkg/api/almoner/imports/v1"
	_ "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	_ "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	_ "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	_ "github.com/almoner/almoner/pkg/api/almoner/webhooks/v1"
)

func main() {
	in := flag.String("swagger", "", "protoc-gen-openapiv2's merged Swagger 2.0 document")
	out := flag.String("out", "", "where to write the OpenAPI 3.1 document")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "openapigen:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	if in == "" || out == "" {
		return fmt.Errorf("-swagger and -out are required")
	}
	sw, err := os.ReadFile(filepath.Clean(in))
	if err != nil {
		return fmt.Errorf("read %s: %w", in, err)
	}
	doc, err := openapigen.Build(protoregistry.GlobalFiles, sw)
	if err != nil {
		return fmt.Errorf("build the document: %w", err)
	}
	b, err := openapigen.Marshal(doc)
	if err != nil {
		return err
	}
	// The document is checked in and served to every reader: world-readable.
	if err := os.WriteFile(out, b, 0o644); err != nil { //nolint:gosec // G306: a checked-in public document, not a secret
		return fmt.Errorf("write %s: %w", out, err)
	}
	return nil
}
