package auth

import "github.com/almoner/almoner/pkg/apperr"

// Domain errors of the auth service.
var (
	errKeyNotFound    = apperr.NotFound("API key")
	errTenantNotFound = apperr.NotFound("Tenant")
)

// codeKeyLimit is the typed code of the 400 for a tenant at its cap of
// active API keys (Config.KeyLimit).
const codeKeyLimit = "ApiKey.LimitReached"
