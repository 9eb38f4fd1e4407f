module mailbolt-go

go 1.26
