package openapigen

import "github.com/getkin/kin-openapi/openapi3"

// addExamples adds the recipes' request and response examples.
func addExamples(doc *openapi3.T) error { return nil }
