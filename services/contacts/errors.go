package contacts

import (
	"fmt"

	"github.com/almoner/almoner/pkg/apperr"
)

// Domain errors of the contacts service.
var (
	errContactNotFound = apperr.NotFound("Contact")
	errTenantNotFound  = apperr.NotFound("Tenant")
)

// errVersionMismatch is the 409 of an If-Match that names an older version:
// the client must read the contact again before replacing it.
func errVersionMismatch(current int64) error {
	return apperr.Conflict("Contact.VersionMismatch",
		fmt.Sprintf("The contact has changed since it was read; its current ETag is %s. Read it again and retry.", etag(current)))
}
