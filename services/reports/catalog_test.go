package reports

import (
	"slices"
	"testing"

	"github.com/almoner/almoner/pkg/reporttypes"
)

// The OpenAPI document lists pkg/reporttypes as the values a typeKey takes;
// a type added to Catalog but not there would be refused by every client
// generated from it.
func TestCatalogKeysArePublished(t *testing.T) {
	var keys []string
	for _, typ := range Catalog {
		keys = append(keys, typ.Key)
	}
	if want := reporttypes.Keys(); !slices.Equal(keys, want) {
		t.Fatalf("Catalog keys %v, pkg/reporttypes.Keys() %v: add the new type to both, in the same order", keys, want)
	}
}
