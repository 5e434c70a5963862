// Package wire is what the orders service's rooms share at the API's
// edge: stored orders, funds, batches and schedules as the API shows
// them, the checks of common request fields (amounts, text, addresses),
// and the typed problem codes and not-found answers of docs/orders.md.
package wire
