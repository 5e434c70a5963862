package auth

import "github.com/almoner/almoner/pkg/apperr"

// Domain errors of the auth service.
var (
	errKeyNotFound    = apperr.NotFound("API key")
	errTenantNotFound = apperr.NotFound("Tenant")
)
