module github.com/almoner/almoner/docs/examples/webhook-receiver

go 1.26.0

require github.com/almoner/almoner/pkg v0.0.0

replace github.com/almoner/almoner/pkg => ../../../pkg
