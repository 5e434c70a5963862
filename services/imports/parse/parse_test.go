package parse

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
)

// readAll reads every row of a file; the rows' errors as "row column:
// message", the good rows' numbers, and the error that ended the file.
func readAll(kind, format, body string) (errs []string, good []int64, err error) {
	r, err := NewReader(kind, format, strings.NewReader(body), "USD")
	if err != nil {
		return nil, nil, err
	}
	for {
		row, err := r.Next()
		if errors.Is(err, io.EOF) {
			return errs, good, nil
		}
		if err != nil {
			return errs, good, err
		}
		for _, e := range row.Errors {
			errs = append(errs, fmt.Sprintf("%d %s: %s", e.Row, e.Column, e.Message))
		}
		if len(row.Errors) == 0 {
			if (row.Contact == nil) == (row.Gift == nil) {
				return errs, good, fmt.Errorf("row %d has no parsed value or two", row.Num)
			}
			good = append(good, row.Num)
		}
	}
}

func TestContactRows(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, row string
		want      []string
	}{
		{"individual", "Ann,Smith,,,,,,,,,,,", nil},
		{"first name only", "Ann,,,,,,,,,,,,", nil},
		{"no name", ",,,,,,,,,,,,", []string{"1 lastName: An individual needs a firstName or a lastName."}},
		{"organization", ",,Acme,Organization,,,,,,,,,", nil},
		{"organization lower case", ",,Acme,organization,,,,,,,,,", nil},
		{"organization without name", "Ann,,,Organization,,,,,,,,,", []string{"1 organizationName: An organization needs an organizationName."}},
		{"bad type", "Ann,,,Household,,,,,,,,,", []string{"1 contactType: 'contactType' must be Individual or Organization."}},
		{"email", "Ann,,,,ann@example.org,,,,,,,,", nil},
		{"bad email", "Ann,,,,ann@,,,,,,,,", []string{"1 email: 'email' is not a valid email address."}},
		{"email with name", "Ann,,,,Ann <ann@example.org>,,,,,,,,", []string{"1 email: 'email' is not a valid email address."}},
		{"phone", "Ann,,,,,+1 (555) 123-4567 ext. 12,,,,,,,", nil},
		{"bad phone", "Ann,,,,,12345,,,,,,,", []string{"1 phone: 'phone' is not a valid phone number (7 to 15 digits, optionally with an extension)."}},
		{"address", "Ann,,,,,,1 Main St,Apt 2,Springfield,IL,62701-1234,us,", nil},
		{"address without line1", "Ann,,,,,,,,Springfield,,,,", []string{"1 line1: 'line1' must not be empty when the row has an address."}},
		{"country", "Ann,,,,,,1 Main St,,,,,USA,", []string{"1 country: 'country' must be an ISO 3166-1 alpha-2 code such as US."}},
		{"postal code", "Ann,,,,,,1 Main St,,,,62701_1,,", []string{"1 postalCode: 'postalCode' must be at most 20 letters, digits, spaces or hyphens."}},
		{"long name", strings.Repeat("a", 101) + ",,,,,,,,,,,,", []string{"1 firstName: 'firstName' must be 100 characters or fewer."}},
		{"control character", "Ann\x01,,,,,,,,,,,,", []string{"1 firstName: 'firstName' must not contain control characters."}},
		{"tags", "Ann,,,,,,,,,,,,a; b ;A;;c", nil},
		{"long tag", "Ann,,,,,,,,,,,," + strings.Repeat("t", 51), []string{"1 tags: Each tag must be 50 characters or fewer."}},
		{"too many tags", "Ann,,,,,,,,,,,," + strings.Repeat("t;", 50) + strings.Join(numbered("t", 51), ";"), []string{"1 tags: 'tags' must hold 50 tags or fewer."}},
		{"values count", "Ann,Smith", []string{"1 : The row has 2 values; the header has 13."}},
		{"bare quote", `An"n,,,,,,,,,,,,`, []string{`1 : The row is not valid CSV: bare " in non-quoted-field.`}},
	}
	const head = "firstName,lastName,organizationName,contactType,email,phone,line1,line2,city,stateProvince,postalCode,country,tags\n"
	for _, c := range cases {
		errs, _, err := readAll(KindContacts, FormatCSV, head+c.row+"\n")
		if err != nil || !slices.Equal(errs, c.want) {
			t.Errorf("%s: errors %q (%v), want %q", c.name, errs, err, c.want)
		}
	}
}

func numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint(prefix, i)
	}
	return out
}

func TestContactValues(t *testing.T) {
	t.Parallel()
	body := "\ufeff TAGS ,lastName,Country,email,contactType,line1\n\" x ; y;X \",  Smith ,ca,ann@example.org,,1 Main St\n"
	r, err := NewReader(KindContacts, FormatCSV, strings.NewReader(body), "")
	if err != nil {
		t.Fatal(err)
	}
	row, err := r.Next()
	if err != nil || len(row.Errors) > 0 {
		t.Fatalf("row: %v %v", row.Errors, err)
	}
	c := row.Contact
	if c.GetRow() != 1 || c.GetLastName() != "Smith" || c.GetCountry() != "CA" || c.GetContactType() != "Individual" ||
		!slices.Equal(c.GetTags(), []string{"x", "y"}) || c.GetEmail() != "ann@example.org" {
		t.Errorf("contact = %v", c)
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("after the last row: %v", err)
	}
}

func TestGiftRows(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, row string
		want      []string
	}{
		{"by external id", "C1,,2025-01-31,25.00,,,", nil},
		{"by id", ",42,2025-01-31,25,usd,Check,1001", nil},
		{"both", "C1,42,2025-01-31,25,,,", []string{"1 contactId: Give either contactId or contactExternalId, not both."}},
		{"neither", ",,2025-01-31,25,,,", []string{"1 contactId: Give contactId or contactExternalId."}},
		{"bad id", ",x,2025-01-31,25,,,", []string{"1 contactId: 'contactId' must be a whole number greater than 0."}},
		{"zero id", ",0,2025-01-31,25,,,", []string{"1 contactId: 'contactId' must be a whole number greater than 0."}},
		{"bad date", "C1,,2025-02-30,25,,,", []string{"1 date: 'date' must be a date written YYYY-MM-DD."}},
		{"date form", "C1,,31/01/2025,25,,,", []string{"1 date: 'date' must be a date written YYYY-MM-DD."}},
		{"no date", "C1,,,25,,,", []string{"1 date: 'date' must not be empty."}},
		{"three decimals", "C1,,2025-01-31,25.001,,,", []string{"1 amount: 'amount' has more decimals than the currency has (2)."}},
		{"yen decimals", "C1,,2025-01-31,25.5,JPY,,", []string{"1 amount: 'amount' has more decimals than the currency has (0)."}},
		{"negative", "C1,,2025-01-31,-5,,,", []string{"1 amount: 'amount' must be greater than 0."}},
		{"zero", "C1,,2025-01-31,0.00,,,", []string{"1 amount: 'amount' must be greater than 0."}},
		{"words", "C1,,2025-01-31,ten,,,", []string{"1 amount: 'amount' must be a decimal number such as 25.00."}},
		{"thousands", "C1,,2025-01-31,\"1,000.00\",,,", []string{"1 amount: 'amount' must be a decimal number such as 25.00."}},
		{"huge", "C1,,2025-01-31,99999999999999999999,,,", []string{"1 amount: 'amount' is too large."}},
		{"no amount", "C1,,2025-01-31,,,,", []string{"1 amount: 'amount' must not be empty."}},
		{"currency", "C1,,2025-01-31,5,US,,", []string{"1 currency: 'currency' must be an ISO 4217 currency code such as USD."}},
		{"method", "C1,,2025-01-31,5,,Card,", []string{"1 paymentMethod: 'paymentMethod' must be Cash, Check or External."}},
		{"check number without check", "C1,,2025-01-31,5,,Cash,1001", []string{"1 checkNumber: 'checkNumber' is for a paymentMethod of Check only."}},
	}
	const head = "contactExternalId,contactId,date,amount,currency,paymentMethod,checkNumber\n"
	for _, c := range cases {
		errs, _, err := readAll(KindGifts, FormatCSV, head+c.row+"\n")
		if err != nil || !slices.Equal(errs, c.want) {
			t.Errorf("%s: errors %q (%v), want %q", c.name, errs, err, c.want)
		}
	}
}

func TestGiftValues(t *testing.T) {
	t.Parallel()
	body := `{"contactId": 42, "date": "2025-01-31", "amount": 1234.5, "currency": "eur", "fund": " General ", "campaignId": "spring",` +
		` "paymentMethod": "CHECK", "checkNumber": "77", "reference": "r-1", "externalId": "G1"}`
	r, err := NewReader(KindGifts, FormatJSONL, strings.NewReader(body), "JPY")
	if err != nil {
		t.Fatal(err)
	}
	row, err := r.Next()
	if err != nil || len(row.Errors) > 0 {
		t.Fatalf("row: %v %v", row.Errors, err)
	}
	g := row.Gift
	if g.GetContactId() != 42 || g.GetAmountMinor() != 123450 || g.GetCurrency() != "EUR" || g.GetFund() != "General" ||
		g.GetPaymentMethod() != "Check" || g.GetCheckNumber() != "77" || g.GetExternalId() != "G1" || g.GetDate() != "2025-01-31" ||
		g.GetCampaignId() != "spring" || g.GetReference() != "r-1" {
		t.Errorf("gift = %v", g)
	}
	// Without a currency the amount is in the tenant's (JPY: no decimals).
	errs, _, _ := readAll(KindGifts, FormatJSONL, `{"contactId": 1, "date": "2025-01-31", "amount": 100}`)
	if len(errs) != 0 {
		t.Errorf("errors %q", errs)
	}
	r, _ = NewReader(KindGifts, FormatJSONL, strings.NewReader(`{"contactId": 1, "date": "2025-01-31", "amount": 100}`), "JPY")
	if row, _ := r.Next(); row.Gift.GetAmountMinor() != 100 {
		t.Errorf("JPY amount = %d, want 100", row.Gift.GetAmountMinor())
	}
}

func TestJSONLines(t *testing.T) {
	t.Parallel()
	body := "\ufeff{\"lastName\": \"A\"}\r\n" + // 1
		"\n" + // 2: blank
		"{\"lastName\": \"B\", \"shoe\": 1, \"hat\": 2}\n" + // 3
		"[\"lastName\"]\n" + // 4
		"{\"lastName\": \"C\"} {}\n" + // 5
		"{\"lastName\": \n" + // 6
		"{\"lastName\": {\"x\": 1}}\n" + // 7
		"{\"lastName\": \"D\", \"tags\": [\"a\", \"b\"]}\n" + // 8
		"{\"lastName\": \"E\", \"tags\": [1]}\n" + // 9
		"{\"LASTNAME\": \"F\", \"contactType\": null}" // 10, no final newline
	errs, good, err := readAll(KindContacts, FormatJSONL, body)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"3 hat: 'hat' is not a column of a contacts import.",
		"3 shoe: 'shoe' is not a column of a contacts import.",
		"4 : The line must hold one JSON object.",
		"5 : The line must hold one JSON object and nothing after it.",
		"6 : The line is not valid JSON: unexpected EOF.",
		"7 lastName: 'lastName' must be a string or a number.",
		"9 tags: 'tags' must be a string or a number.",
	}
	if !slices.Equal(errs, want) {
		t.Errorf("errors %q, want %q", errs, want)
	}
	if !slices.Equal(good, []int64{1, 8, 10}) {
		t.Errorf("good rows %v", good)
	}
}

func TestLongRows(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 2*MaxRowBytes)
	_, _, err := readAll(KindContacts, FormatCSV, "lastName\nA\n\""+long+"\"\nB\n")
	if !IsFileError(err) || !strings.Contains(err.Error(), "Row 2 is longer") {
		t.Errorf("CSV row too long: %v", err)
	}
	errs, good, err := readAll(KindContacts, FormatJSONL, `{"lastName": "A"}`+"\n"+long+"\n"+`{"lastName": "B"}`+"\n")
	if err != nil || !slices.Equal(good, []int64{1, 3}) || len(errs) != 1 || !strings.HasPrefix(errs[0], "2 : The line is longer") {
		t.Errorf("JSON line too long: %q %v %v", errs, good, err)
	}
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	cases := []struct {
		kind, body, want string
	}{
		{KindContacts, "", "The file has no header row."},
		{KindContacts, "lastName,nickname\n", `Unknown columns in the header: "nickname".`},
		{KindContacts, "lastName,LASTNAME\n", "Columns named more than once in the header: lastName."},
		{KindContacts, "lastName,\n", `Unknown columns in the header: "".`},
		{KindContacts, "email\n", "The header needs the column firstName or lastName or organizationName."},
		{KindGifts, "contactId,date\n", "The header needs the column amount."},
		{KindGifts, "date,amount\n", "The header needs the column contactExternalId or contactId."},
		{KindContacts, "last\xffName\n", "The file is not UTF-8 text (the header row)."},
		{KindContacts, "\"lastName\n", "The header row is not valid CSV"},
	}
	for _, c := range cases {
		_, err := NewReader(c.kind, FormatCSV, strings.NewReader(c.body), "")
		if !IsFileError(err) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.body, err, c.want)
		}
	}
	// A header-only file has no rows.
	if errs, good, err := readAll(KindContacts, FormatCSV, "lastName\n"); err != nil || errs != nil || good != nil {
		t.Errorf("header only: %v %v %v", errs, good, err)
	}
}

// FuzzCSV feeds arbitrary files to the CSV reader: it never panics, row
// numbers rise one at a time, and every row is either parsed or refused.
func FuzzCSV(f *testing.F) {
	f.Add("contacts", "lastName,email,tags\nA,a@b.co,x;y\n")
	f.Add("contacts", "\ufefffirstName,organizationName,contactType\n,Acme,Organization\n\"a\"\"b\",,\n")
	f.Add("gifts", "contactId,date,amount,currency\n1,2025-01-01,1.50,EUR\n2,2025-13-01,-1,\n")
	f.Add("gifts", "contactExternalId,date,amount\n\"C\n1\",2025-01-01,1\n")
	f.Fuzz(func(t *testing.T, kind, body string) {
		if kind != KindContacts {
			kind = KindGifts
		}
		fuzzRead(t, kind, FormatCSV, body)
	})
}

// FuzzJSONL is FuzzCSV for JSON Lines.
func FuzzJSONL(f *testing.F) {
	f.Add("contacts", `{"lastName":"A","tags":["x"]}`+"\n\n[1]\n")
	f.Add("gifts", `{"contactId":1,"date":"2025-01-01","amount":1.5e2}`+"\n"+`{"amount":"x"} 1`)
	f.Fuzz(func(t *testing.T, kind, body string) {
		if kind != KindContacts {
			kind = KindGifts
		}
		fuzzRead(t, kind, FormatJSONL, body)
	})
}

func fuzzRead(t *testing.T, kind, format, body string) {
	r, err := NewReader(kind, format, strings.NewReader(body), "USD")
	if err != nil {
		if !IsFileError(err) {
			t.Fatalf("header: %v is no file error", err)
		}
		return
	}
	last := int64(0)
	for {
		row, err := r.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			if !IsFileError(err) {
				t.Fatalf("%v is no file error", err)
			}
			return
		}
		if row.Num <= last || (format == FormatCSV && row.Num != last+1) {
			t.Fatalf("row %d after row %d", row.Num, last)
		}
		last = row.Num
		parsed := row.Contact != nil || row.Gift != nil
		if parsed == (len(row.Errors) > 0) {
			t.Fatalf("row %d: parsed %v with errors %v", row.Num, parsed, row.Errors)
		}
		if g := row.Gift; g != nil && (g.GetAmountMinor() <= 0 || (g.GetContactId() > 0) == (g.ContactExternalID != "")) {
			t.Fatalf("row %d: gift %v accepted", row.Num, g)
		}
	}
}
