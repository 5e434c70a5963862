package main

import (
	"bytes"
	"fmt"
	"testing"
)

func TestRequestsCounter(t *testing.T) {
	tests := []struct {
		name  string
		cycle int
		want  []int
	}{
		{"counts up", 0, []int{1, 2, 3, 4, 5}},
		{"cycles over existing resources", 3, []int{1, 2, 3, 1, 2}},
		{"a cycle of one", 1, []int{1, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := options{method: "POST", url: "http://127.0.0.1:1/x", body: `{"contactId":{{n}}}`, cycle: tt.cycle}
			_, next, err := requests(o)
			if err != nil {
				t.Fatal(err)
			}
			for i, n := range tt.want {
				if req := next(); !bytes.HasSuffix(req, fmt.Appendf(nil, `{"contactId":%d}`, n)) {
					t.Fatalf("request %d ends %q, want contactId %d", i+1, req[max(0, len(req)-20):], n)
				}
			}
		})
	}
}

func TestRequestsRandom(t *testing.T) {
	o := options{method: "POST", url: "http://127.0.0.1:1/x", body: `{"contactId":{{random:7:9}},"n":{{n}},"fund":{{random:-1:-1}}}`}
	_, next, err := requests(o)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	for i := 1; i <= 300; i++ {
		req := next()
		var contact, n, fund int
		body := req[bytes.LastIndexByte(req, '\n')+1:]
		if _, err := fmt.Sscanf(string(body), `{"contactId":%d,"n":%d,"fund":%d}`, &contact, &n, &fund); err != nil {
			t.Fatalf("request %d: body %q: %v", i, body, err)
		}
		if contact < 7 || contact > 9 || n != i || fund != -1 {
			t.Fatalf("request %d: body %q, want contactId in 7..9, n %d and fund -1", i, body, i)
		}
		seen[contact]++
	}
	// 300 draws from three values: each is missing with probability
	// (2/3)^300, never in practice.
	if len(seen) != 3 {
		t.Fatalf("contact ids drawn: %v, want each of 7, 8 and 9", seen)
	}
}

func TestRequestsRandomRefused(t *testing.T) {
	for _, body := range []string{`{{random:9:7}}`, `{{random:1:x}}`, `{{random:1}}`, `{{random:-9223372036854775808:9223372036854775807}}`} {
		if _, _, err := requests(options{method: "POST", url: "http://127.0.0.1:1/x", body: body}); err == nil {
			t.Errorf("body %q: no error", body)
		}
	}
}
