// Package normalize checks and normalizes the parts of a contact that
// duplicate detection compares: email addresses, phone numbers, postal
// codes, countries and names; and the enum values of requests (OneOf).
// Its functions take untrusted input straight from request bodies, so
// each is fuzz-tested.
package normalize

import (
	"net/mail"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxEmailLength is the longest address accepted (RFC 5321's path limit).
const MaxEmailLength = 254

// Email checks an address and returns it trimmed, and its match key: the
// address in lower case. Only the whole address is lowered (no dropping of
// dots or +tags): providers differ on those, and a false duplicate is worse
// than a missed one.
func Email(s string) (addr, key string, ok bool) {
	addr = strings.TrimSpace(s)
	if addr == "" || len(addr) > MaxEmailLength || !utf8.ValidString(addr) {
		return "", "", false
	}
	at := strings.LastIndexByte(addr, '@')
	if at <= 0 || at > 64 || at == len(addr)-1 {
		return "", "", false
	}
	for _, r := range addr {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return "", "", false
		}
	}
	// net/mail knows the RFC 5322 local-part syntax; an address it reads
	// back differently (a display name, angle brackets) is not a bare one.
	parsed, err := mail.ParseAddress(addr)
	if err != nil || parsed.Address != addr || parsed.Name != "" {
		return "", "", false
	}
	if !validDomain(addr[at+1:]) {
		return "", "", false
	}
	return addr, strings.ToLower(addr), true
}

// validDomain accepts a host name with at least two labels, each 1 to 63
// characters of letters (any script), digits and inner hyphens, and a
// top-level label that is not all digits.
func validDomain(d string) bool {
	if len(d) > 253 {
		return false
	}
	labels := strings.Split(d, ".")
	if len(labels) < 2 {
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
	tld := labels[len(labels)-1]
	return strings.TrimFunc(tld, unicode.IsDigit) != ""
}

// Phone limits: E.164 numbers have at most 15 digits; 7 is the shortest
// local number worth storing.
const (
	MinPhoneDigits    = 7
	MaxPhoneDigits    = 15
	MaxPhoneLength    = 30
	phoneKeyDigits    = 10
	maxExtensionChars = 10
)

// Phone checks a number as people write it ("+1 (555) 123-4567",
// "555.123.4567 ext. 12") and returns it trimmed, and its match key: the
// last 10 digits of the number without its extension. Comparing the
// national significant part lets "+1 555 123 4567" match "(555) 123-4567"
// without knowing the country.
func Phone(s string) (number, key string, ok bool) {
	number = strings.TrimSpace(s)
	if number == "" || len(number) > MaxPhoneLength || !utf8.ValidString(number) {
		return "", "", false
	}
	main := number
	// Lower ASCII only, so that byte offsets in lower are offsets in number.
	lower := strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r - 'A' + 'a'
		}
		return r
	}, number)
	for _, sep := range []string{"extension", "ext.", "ext", "x", "#"} {
		if i := strings.LastIndex(lower, sep); i > 0 {
			ext := strings.TrimSpace(number[i+len(sep):])
			if ext == "" || len(ext) > maxExtensionChars || strings.TrimFunc(ext, isASCIIDigit) != "" {
				return "", "", false
			}
			main = number[:i]
			break
		}
	}
	var digits []byte
	for i, r := range main {
		switch {
		case isASCIIDigit(r):
			digits = append(digits, byte(r))
		case r == '+':
			if strings.TrimSpace(main[:i]) != "" {
				return "", "", false
			}
		case r == ' ' || r == '-' || r == '(' || r == ')' || r == '.' || r == '/':
		default:
			return "", "", false
		}
	}
	if len(digits) < MinPhoneDigits || len(digits) > MaxPhoneDigits {
		return "", "", false
	}
	if len(digits) > phoneKeyDigits {
		digits = digits[len(digits)-phoneKeyDigits:]
	}
	return number, string(digits), true
}

func isASCIIDigit(r rune) bool { return r >= '0' && r <= '9' }

// MaxPostalCodeLength is the longest postal code accepted.
const MaxPostalCodeLength = 20

// PostalCode checks a postal code and returns it trimmed, and its match
// key: upper-case letters and digits only, and for the United States (or
// no country) a ZIP+4 cut to its five-digit ZIP, so "02134-1234" matches
// "02134".
func PostalCode(s, country string) (code, key string, ok bool) {
	code = strings.TrimSpace(s)
	if code == "" || len(code) > MaxPostalCodeLength {
		return "", "", false
	}
	var b strings.Builder
	for _, r := range code {
		switch {
		case r >= '0' && r <= '9', r >= 'A' && r <= 'Z':
			b.WriteRune(r)
		case r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
		case r == ' ' || r == '-':
		default:
			return "", "", false
		}
	}
	key = b.String()
	if key == "" {
		return "", "", false
	}
	if (country == "US" || country == "") && len(key) == 9 && strings.TrimFunc(key, isASCIIDigit) == "" {
		key = key[:5]
	}
	return code, key, true
}

// Country returns the upper-case ISO 3166-1 alpha-2 code of s, if s is one
// (in either case).
func Country(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if len(s) != 2 {
		return "", false
	}
	c := strings.ToUpper(s)
	return c, iso3166[c]
}

// NameKey is the form names are compared in: lower case, runs of spaces
// folded to one.
func NameKey(parts ...string) string {
	return strings.ToLower(strings.Join(strings.Fields(strings.Join(parts, " ")), " "))
}

// iso3166 holds the 249 officially assigned ISO 3166-1 alpha-2 codes.
var iso3166 = func() map[string]bool {
	const codes = `AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS
BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET
FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO
IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH
MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM
PN PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG
TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW`
	m := map[string]bool{}
	for _, c := range strings.Fields(codes) {
		m[c] = true
	}
	return m
}()

// OneOf returns the member of set equal to s ignoring letter case and the
// spaces around it, or "" when none is: enum values of requests are taken
// in any case and kept in their one spelling.
func OneOf(set []string, s string) string {
	s = strings.TrimSpace(s)
	for _, m := range set {
		if strings.EqualFold(m, s) {
			return m
		}
	}
	return ""
}
