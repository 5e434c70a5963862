package parse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
)

// contactsFile makes a contacts CSV of n rows like a real migration's:
// names, an email, a phone, an address and two tags each.
func contactsFile(n int) []byte {
	var b bytes.Buffer
	b.WriteString("externalId,firstName,lastName,email,phone,line1,city,stateProvince,postalCode,country,tags\n")
	for i := range n {
		fmt.Fprintf(&b, "X%d,First%d,Last%d,donor%d@example.org,+1 555 %07d,%d Main St,Springfield,IL,62701,US,donor;newsletter\n",
			i, i, i, i, i, i)
	}
	return b.Bytes()
}

func giftsFile(n int) []byte {
	var b bytes.Buffer
	b.WriteString("externalId,contactExternalId,date,amount,currency,fund,paymentMethod,reference\n")
	for i := range n {
		fmt.Fprintf(&b, "G%d,X%d,2025-%02d-%02d,%d.%02d,USD,General,External,ref-%d\n", i, i%50000, i%12+1, i%28+1, i%500+1, i%100, i)
	}
	return b.Bytes()
}

// BenchmarkParseContacts1M parses and checks 1,000,000 contact rows (the
// runner parses a file twice: validation, then the import): rows/s and
// MB/s are reported; memory per row stays constant.
func BenchmarkParseContacts1M(b *testing.B) { benchParse(b, KindContacts, contactsFile(1_000_000)) }

// BenchmarkParseGifts1M is BenchmarkParseContacts1M for gifts.
func BenchmarkParseGifts1M(b *testing.B) { benchParse(b, KindGifts, giftsFile(1_000_000)) }

func benchParse(b *testing.B, kind string, file []byte) {
	b.SetBytes(int64(len(file)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		r, err := NewReader(kind, FormatCSV, bytes.NewReader(file), "USD")
		if err != nil {
			b.Fatal(err)
		}
		n = 0
		for {
			row, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil || len(row.Errors) > 0 {
				b.Fatalf("row %d: %v %v", row.Num, row.Errors, err)
			}
			n++
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
