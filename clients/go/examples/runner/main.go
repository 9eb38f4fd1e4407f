// Command runner is the Go client's example program; examples/run builds and runs it.
//
//	run send    sends one message (MAILBOLT_BASE_URL, MAILBOLT_API_KEY,
//	            MAILBOLT_EXAMPLE_FROM, MAILBOLT_EXAMPLE_TO) and prints its id
//	run verify  verifies a webhook body read on stdin (MAILBOLT_EXAMPLE_WEBHOOK_SECRET,
//	            comma-separated; MAILBOLT_EXAMPLE_SIGNATURE; MAILBOLT_EXAMPLE_TIMESTAMP;
//	            MAILBOLT_EXAMPLE_NOW, unix seconds, for the clock) and prints valid or invalid
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"mailbolt-go"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: run send|verify")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "send":
		os.Exit(send())
	case "verify":
		os.Exit(verify())
	default:
		fmt.Fprintln(os.Stderr, "usage: run send|verify")
		os.Exit(2)
	}
}

func send() int {
	client, err := mailbolt.New(mailbolt.Options{}) // MAILBOLT_API_KEY, MAILBOLT_BASE_URL, MAILBOLT_CA_FILE
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	msg, err := client.Messages.Send(ctx, &mailbolt.SendMessageRequest{
		From:    os.Getenv("MAILBOLT_EXAMPLE_FROM"),
		To:      []string{os.Getenv("MAILBOLT_EXAMPLE_TO")},
		Subject: "Hello from mailbolt-go",
		Text:    "Sent by the Go client's example.",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(msg.ID)
	return 0
}

func verify() int {
	body, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var v mailbolt.Verifier
	if s := os.Getenv("MAILBOLT_EXAMPLE_NOW"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			fmt.Fprintln(os.Stderr, "MAILBOLT_EXAMPLE_NOW:", err)
			return 2
		}
		v.Now = func() time.Time { return time.Unix(n, 0) }
	}
	h := http.Header{}
	h.Set(mailbolt.SignatureHeader, os.Getenv("MAILBOLT_EXAMPLE_SIGNATURE"))
	if ts := os.Getenv("MAILBOLT_EXAMPLE_TIMESTAMP"); ts != "" {
		h.Set(mailbolt.TimestampHeader, ts)
	}
	secrets := strings.Split(os.Getenv("MAILBOLT_EXAMPLE_WEBHOOK_SECRET"), ",")
	if err := v.Verify(body, h, secrets...); err != nil {
		fmt.Println("invalid")
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("valid")
	return 0
}
