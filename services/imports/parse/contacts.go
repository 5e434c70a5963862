package parse

import (
	"strings"
	"unicode"
	"unicode/utf8"

	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	"github.com/almoner/almoner/pkg/normalize"
)

// The columns of a contacts file, in the documented order.
const (
	cExternalID = iota
	cContactType
	cFirstName
	cLastName
	cOrganizationName
	cEmail
	cPhone
	cLine1
	cLine2
	cCity
	cStateProvince
	cPostalCode
	cCountry
	cTags
)

var contactColumns = []string{"externalId", "contactType", "firstName", "lastName", "organizationName", "email", "phone",
	"line1", "line2", "city", "stateProvince", "postalCode", "country", "tags"}

// The limits of services/contacts/validation.go, so that a row refused
// there is refused here first, with its row number. Emails, phones and
// postal codes are checked by pkg/normalize, as the contacts service
// checks them.
const (
	maxNameLength         = 100
	maxOrganizationLength = 200
	maxExternalIDLength   = 100
	maxLineLength         = 200
	maxCityLength         = 100
	maxStateLength        = 100
	maxTags               = 50
	maxTagLength          = 50
)

// tagSeparator separates the tags of the tags column.
const tagSeparator = ";"

var contactTypes = []string{"Individual", "Organization"}

var contactsSpec = newSpec(KindContacts, contactColumns,
	[][]string{{"firstName", "lastName", "organizationName"}}, checkContact)

// checkContact checks a contacts row and fills row.Contact.
func checkContact(v *values, row *Row, _ string) {
	c := &contactsv1.ContactImportRow{Row: v.num}
	c.ContactType = v.enum(cContactType, "contactType", contactTypes)
	if c.ContactType == "" && !v.failed("contactType") {
		c.ContactType = "Individual"
	}
	c.ExternalId = v.text(cExternalID, "externalId", maxExternalIDLength)
	c.FirstName = v.text(cFirstName, "firstName", maxNameLength)
	c.LastName = v.text(cLastName, "lastName", maxNameLength)
	c.OrganizationName = v.text(cOrganizationName, "organizationName", maxOrganizationLength)
	switch {
	case c.ContactType == "Individual" && c.FirstName == "" && c.LastName == "" && !v.failed("firstName") && !v.failed("lastName"):
		v.fail("lastName", "An individual needs a firstName or a lastName.")
	case c.ContactType == "Organization" && c.OrganizationName == "" && !v.failed("organizationName"):
		v.fail("organizationName", "An organization needs an organizationName.")
	}
	if c.Email = v.get(cEmail); c.Email != "" && !valid(normalize.Email(c.Email)) {
		v.fail("email", "'email' is not a valid email address.")
	}
	if c.Phone = v.get(cPhone); c.Phone != "" && !valid(normalize.Phone(c.Phone)) {
		v.fail("phone", "'phone' is not a valid phone number (7 to 15 digits, optionally with an extension).")
	}
	checkAddress(v, c)
	c.Tags = tags(v)
	row.Contact = c
}

// checkAddress checks the primary address's columns: an address needs
// its first line.
func checkAddress(v *values, c *contactsv1.ContactImportRow) {
	c.Line1 = v.text(cLine1, "line1", maxLineLength)
	c.Line2 = v.text(cLine2, "line2", maxLineLength)
	c.City = v.text(cCity, "city", maxCityLength)
	c.StateProvince = v.text(cStateProvince, "stateProvince", maxStateLength)
	if c.PostalCode = v.get(cPostalCode); c.PostalCode != "" && !valid(normalize.PostalCode(c.PostalCode, "")) {
		v.fail("postalCode", "'postalCode' must be at most %d letters, digits, spaces or hyphens.", normalize.MaxPostalCodeLength)
	}
	if cc := v.get(cCountry); cc != "" {
		if len(cc) != 2 || !isASCIILetter(cc[0]) || !isASCIILetter(cc[1]) {
			v.fail("country", "'country' must be an ISO 3166-1 alpha-2 code such as US.")
		}
		c.Country = strings.ToUpper(cc)
	}
	hasAddress := c.Line2 != "" || c.City != "" || c.StateProvince != "" || c.PostalCode != "" || c.Country != ""
	if c.Line1 == "" && hasAddress && !v.failed("line1") {
		v.fail("line1", "'line1' must not be empty when the row has an address.")
	}
}

// tags splits the tags column on ";", trims each tag and drops empty ones
// and repeats (ignoring case, keeping the first spelling).
func tags(v *values) []string {
	raw := v.get(cTags)
	if raw == "" {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, t := range strings.Split(raw, tagSeparator) {
		t = strings.TrimSpace(t)
		key := strings.ToLower(t)
		if t == "" || seen[key] {
			continue
		}
		seen[key] = true
		if utf8.RuneCountInString(t) > maxTagLength {
			v.fail("tags", "Each tag must be %d characters or fewer.", maxTagLength)
			return nil
		}
		if strings.IndexFunc(t, unicode.IsControl) >= 0 {
			v.fail("tags", "'tags' must not contain control characters.")
			return nil
		}
		out = append(out, t)
	}
	if len(out) > maxTags {
		v.fail("tags", "'tags' must hold %d tags or fewer.", maxTags)
		return nil
	}
	return out
}

// valid is the verdict of a pkg/normalize check, without its values.
func valid(_, _ string, ok bool) bool { return ok }

func isASCIILetter(b byte) bool { return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') }
