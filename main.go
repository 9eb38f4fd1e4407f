// Command mailbolt is a self-hosted transactional email service in one
// binary. See README.md.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "mailbolt:", err)
		os.Exit(1)
	}
}
