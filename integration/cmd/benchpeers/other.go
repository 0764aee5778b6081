//go:build !linux

// Command benchpeers is Linux only: see main.go.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "benchpeers: Linux only (its servers and peers run as child processes with Pdeathsig)")
	os.Exit(1)
}
