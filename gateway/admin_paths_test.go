package gateway

import (
	"net/http"
	"testing"
)

// TestAdminPathsNeedAnOperator: no spelling of an /api/admin path reaches
// a route without the operator check: the services read a call without a
// principal as the admin command's.
func TestAdminPathsNeedAnOperator(t *testing.T) {
	g, _ := startEdge(t, Config{})
	for _, p := range []string{"/api/admin/tenants", "/api//admin/tenants", "/api/admin//tenants", "//api/admin/tenants",
		"/api/./admin/tenants", "/api/x/../admin/tenants", "/api/admin/tenants/", "/API/admin/tenants", "/api/%61dmin/tenants"} {
		w := serve(g, request(http.MethodGet, p, "", "", nil, 0))
		if w.Code != http.StatusUnauthorized && w.Code != http.StatusNotFound {
			t.Errorf("GET %s without a session: %d %s", p, w.Code, w.Body)
		}
	}
}
