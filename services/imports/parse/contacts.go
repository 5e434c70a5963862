package parse

import (
	"net/mail"
	"strings"
	"unicode"
	"unicode/utf8"

	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
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

// The limits of services/contacts/validation.go (and its normalize
// package), so that a row refused there is refused here first, with its
// row number.
const (
	maxNameLength         = 100
	maxOrganizationLength = 200
	maxExternalIDLength   = 100
	maxLineLength         = 200
	maxCityLength         = 100
	maxStateLength        = 100
	maxTags               = 50
	maxTagLength          = 50
	maxEmailLength        = 254
	maxPhoneLength        = 30
	minPhoneDigits        = 7
	maxPhoneDigits        = 15
	maxPostalCodeLength   = 20
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
	if c.Email = v.get(cEmail); c.Email != "" && !validEmail(c.Email) {
		v.fail("email", "'email' is not a valid email address.")
	}
	if c.Phone = v.get(cPhone); c.Phone != "" && !validPhone(c.Phone) {
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
	if c.PostalCode = v.get(cPostalCode); c.PostalCode != "" && !validPostalCode(c.PostalCode) {
		v.fail("postalCode", "'postalCode' must be at most %d letters, digits, spaces or hyphens.", maxPostalCodeLength)
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

// validEmail is the form services/contacts/normalize.Email accepts: one
// bare RFC 5322 address of at most 254 bytes, no spaces, a local part of
// at most 64, a domain of two labels or more.
func validEmail(addr string) bool {
	if len(addr) > maxEmailLength {
		return false
	}
	at := strings.LastIndexByte(addr, '@')
	if at <= 0 || at > 64 || at == len(addr)-1 {
		return false
	}
	if strings.IndexFunc(addr, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return false
	}
	parsed, err := mail.ParseAddress(addr)
	if err != nil || parsed.Address != addr || parsed.Name != "" {
		return false
	}
	return validDomain(addr[at+1:])
}

func validDomain(d string) bool {
	labels := strings.Split(d, ".")
	if len(d) > 253 || len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if l == "" || utf8.RuneCountInString(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, r := range l {
			if !(r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)) {
				return false
			}
		}
	}
	return strings.TrimFunc(labels[len(labels)-1], unicode.IsDigit) != ""
}

// validPhone is the form services/contacts/normalize.Phone accepts: 7 to
// 15 digits with the usual separators, a leading +, and an optional
// extension ("ext. 12", "x12", "#12").
func validPhone(s string) bool {
	if len(s) > maxPhoneLength {
		return false
	}
	main := s
	// Lower ASCII only, so that byte offsets in lower are offsets in s.
	lower := strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r - 'A' + 'a'
		}
		return r
	}, s)
	for _, sep := range []string{"extension", "ext.", "ext", "x", "#"} {
		if i := strings.LastIndex(lower, sep); i > 0 {
			ext := strings.TrimSpace(s[i+len(sep):])
			if ext == "" || len(ext) > 10 || strings.TrimFunc(ext, isASCIIDigit) != "" {
				return false
			}
			main = s[:i]
			break
		}
	}
	digits := 0
	for i, r := range main {
		switch {
		case isASCIIDigit(r):
			digits++
		case r == '+':
			if strings.TrimSpace(main[:i]) != "" {
				return false
			}
		case r == ' ' || r == '-' || r == '(' || r == ')' || r == '.' || r == '/':
		default:
			return false
		}
	}
	return digits >= minPhoneDigits && digits <= maxPhoneDigits
}

// validPostalCode is the form services/contacts/normalize.PostalCode
// accepts: letters, digits, spaces and hyphens, with at least one letter
// or digit.
func validPostalCode(s string) bool {
	if len(s) > maxPostalCodeLength {
		return false
	}
	alnum := false
	for _, r := range s {
		switch {
		case r < 128 && (isASCIILetter(byte(r)) || isASCIIDigit(r)):
			alnum = true
		case r == ' ' || r == '-':
		default:
			return false
		}
	}
	return alnum
}

func isASCIIDigit(r rune) bool { return r >= '0' && r <= '9' }

func isASCIILetter(b byte) bool { return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') }
