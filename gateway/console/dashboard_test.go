package console

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestNum(t *testing.T) {
	for in, want := range map[string]num{`12.5`: 12.5, `"1234.56"`: 1234.56, `{"amount":"7","currency":"USD"}`: 7, `null`: 0, `{"amount":3}`: 3} {
		var n num
		if err := json.Unmarshal([]byte(in), &n); err != nil || n != want {
			t.Errorf("%s: %v %v", in, n, err)
		}
	}
	var n num
	if err := json.Unmarshal([]byte(`"ten"`), &n); err == nil {
		t.Error("a word read as a number")
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		v    num
		pct  bool
		want string
	}{
		{0, false, "0"}, {999, false, "999"}, {1000, false, "1,000"}, {1234567.5, false, "1,234,567.50"},
		{-1234, false, "-1,234"}, {0.425, true, "42.5 %"}, {42.5, true, "42.5 %"},
	} {
		if got := format(tc.v, tc.pct); got != tc.want {
			t.Errorf("format(%v, %v) = %q, want %q", tc.v, tc.pct, got, tc.want)
		}
	}
}

// documented is the body issue 34 documents for GET …/dashboard.
const documented = `{"period":{"from":"2026-12-01","to":"2026-12-31"},
"raised":{"current":"1500.00","previous":"1000.00","changePercent":50},
"gifts":{"current":3,"previous":2,"changePercent":50},"donors":{"current":2,"previous":2,"changePercent":0},
"newDonors":{"current":1,"previous":0,"changePercent":null},"retainedDonors":{"current":1,"previous":1,"changePercent":0},
"retentionRate":{"current":0.5,"previous":0.5,"changePercent":0},"averageGift":{"current":"500.00","previous":"500.00","changePercent":0},
"recurring":{"activeSchedules":4,"monthlyRecurringRevenue":"120.00","pastDue":1},
"byFund":[{"fundId":"f1","name":"General <fund>","raised":"1500.00"}],
"byDay":[{"date":"2026-12-01","raised":"1000.00","gifts":2},{"date":"2026-12-02","raised":"500.00","gifts":1}]}`

func TestDashboardPage(t *testing.T) {
	var body any
	if err := json.Unmarshal([]byte(documented), &body); err != nil {
		t.Fatal(err)
	}
	c, _ := newConsole(map[string]fakeAnswer{
		"GET /api/auth/session": {status: 200, body: ownerSession("a@b.c", "T")},
		"GET /api/tenants/" + tid + "/dashboard?date=2026-12-02&period=month": {status: 200, body: body},
		"GET /api/tenants/" + tid + "/dashboard?date=2025-12-02&period=month": {status: 200, body: body},
		"GET /api/tenants/" + tid + "/dashboard?period=month":                 {status: 200, body: body},
	})
	w := do(c, "GET", "/console/t/"+tid+"/dashboard", nil)
	page := w.Body.String()
	for _, want := range []string{`<svg class="chart"`, `class="bar-now"`, `class="bar-prev"`, "1,500", "&#43;50.0 %", "50.0 %",
		"General &lt;fund&gt;", "<td>2026-12-01</td>", "Monthly recurring revenue"} {
		if !strings.Contains(page, want) {
			t.Errorf("dashboard lacks %q", want)
		}
	}
	if w.Code != http.StatusOK || strings.Contains(page, "General <fund>") {
		t.Errorf("%d", w.Code)
	}
	if n := strings.Count(page, `class="bar-now"`); n != 2 {
		t.Errorf("%d bars for 2 days", n)
	}
}

// TestDashboardDegrades: until the route exists (404) the page says so;
// the other pages are unaffected.
func TestDashboardDegrades(t *testing.T) {
	c, _ := newConsole(map[string]fakeAnswer{"GET /api/auth/session": {status: 200, body: ownerSession("a@b.c", "T")}})
	w := do(c, "GET", "/console/t/"+tid+"/dashboard", nil)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "The dashboard is not available on this server yet") {
		t.Errorf("%d %s", w.Code, w.Body)
	}
}

func TestQRCode(t *testing.T) {
	svg, err := qrSVG("otpauth://totp/Almoner:a%40b.c?secret=JBSWY3DPEHPK3PXP&issuer=Almoner")
	if err != nil {
		t.Fatal(err)
	}
	s := string(svg)
	if !strings.HasPrefix(s, `<svg class="qr"`) || !strings.Contains(s, `role="img"`) || strings.Count(s, "h1v1h-1z") < 100 || strings.Contains(s, "JBSWY3") {
		t.Errorf("QR svg %.200s", s)
	}
	if enrollment("s", "javascript:alert(1)") != nil {
		t.Error("an enrollment from a URL that is not otpauth://totp/")
	}
}
