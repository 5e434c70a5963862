package console

import (
	"fmt"
	"html"
	"html/template"
	"strings"
)

// chartDay is one day of the chart, also listed as a table for readers
// who do not see the chart.
type chartDay struct {
	Date, Raised, Previous string
}

// The chart's drawing area, in SVG user units (it scales to the page).
const (
	chartW, chartH = 720.0, 240.0
	chartLeft      = 56.0
	chartBottom    = 24.0
)

// barChart draws raised by day (the period) against the same day a year
// earlier (before, which may be nil), as an inline SVG of rectangles
// coloured by class (console.css): no script, no inline style. Every
// string in it is escaped; the markup is built here, not from the API's
// text.
func barChart(now, before *dashboard) (template.HTML, []chartDay) {
	n := len(now.ByDay)
	if n == 0 {
		return "", nil
	}
	prev := make([]float64, n)
	if before != nil {
		for i := 0; i < n && i < len(before.ByDay); i++ {
			prev[i] = float64(before.ByDay[i].Raised)
		}
	}
	top := 0.0
	days := make([]chartDay, n)
	for i, d := range now.ByDay {
		top = max(top, float64(d.Raised), prev[i])
		days[i] = chartDay{Date: d.Date, Raised: format(d.Raised, false), Previous: format(num(prev[i]), false)}
	}
	if top == 0 {
		top = 1
	}
	plotW, plotH := chartW-chartLeft, chartH-chartBottom
	slot := plotW / float64(n)
	bar := slot * 0.4
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %.0f %.0f" role="img" aria-labelledby="chart-title chart-desc" preserveAspectRatio="none">`, chartW, chartH)
	b.WriteString(`<title id="chart-title">Raised by day</title>`)
	fmt.Fprintf(&b, `<desc id="chart-desc">%s: dark bars this period, light bars the same day a year earlier; highest day %s.</desc>`,
		html.EscapeString(now.Period.From+" to "+now.Period.To), html.EscapeString(format(num(top), false)))
	fmt.Fprintf(&b, `<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, chartLeft, plotH, chartW, plotH)
	fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="12" text-anchor="end">%s</text>`, chartLeft-6, html.EscapeString(format(num(top), false)))
	fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%.1f" text-anchor="end">0</text>`, chartLeft-6, plotH)
	for i, d := range now.ByDay {
		x := chartLeft + float64(i)*slot + slot*0.1
		hNow := float64(d.Raised) / top * (plotH - 16)
		hPrev := prev[i] / top * (plotH - 16)
		fmt.Fprintf(&b, `<rect class="bar-prev" x="%.2f" y="%.2f" width="%.2f" height="%.2f"/>`, x, plotH-hPrev, bar, hPrev)
		fmt.Fprintf(&b, `<rect class="bar-now" x="%.2f" y="%.2f" width="%.2f" height="%.2f"/>`, x+bar, plotH-hNow, bar, hNow)
	}
	fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%.1f">%s</text>`, chartLeft, chartH-6, html.EscapeString(now.ByDay[0].Date))
	fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%.1f" text-anchor="end">%s</text>`, chartW, chartH-6, html.EscapeString(now.ByDay[n-1].Date))
	b.WriteString(`</svg>`)
	return template.HTML(b.String()), days // numbers and escaped text only
}
