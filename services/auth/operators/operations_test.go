package operators

import (
	"testing"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
)

// TestOperationQuery: the log's filters.
func TestOperationQuery(t *testing.T) {
	for _, tc := range []struct {
		req *authv1.ListOperationsRequest
		ok  bool
	}{
		{&authv1.ListOperationsRequest{}, true},
		{&authv1.ListOperationsRequest{Kind: "impersonation", TenantId: "01a2354e-5996-7213-aa54-b6d5f25fc6a9"}, true},
		{&authv1.ListOperationsRequest{Kind: "letter_run"}, true},
		{&authv1.ListOperationsRequest{Kind: "letters"}, false},
		{&authv1.ListOperationsRequest{TenantId: "acme"}, false},
	} {
		if _, err := operationQuery(tc.req); (err == nil) != tc.ok {
			t.Errorf("%v: %v", tc.req, err)
		}
	}
}
