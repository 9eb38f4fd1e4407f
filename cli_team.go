package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"mailbolt/app"
)

// newTeamCommand manages the people who log in to the dashboard
// (docs/cli.md, docs/dashboard.md).
func newTeamCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "team", Short: "Manage the people of an account's dashboard"}
	var account, email, role string
	var keepKeys bool
	printLink := func(cmd *cobra.Command, v app.MemberLinkView) {
		out := cmd.OutOrStdout()
		fmt.Fprintf(out, "%s sets a dashboard password at this link (it works once, until %s):\n",
			v.Email, v.LinkExpiresAt.UTC().Format(time.RFC3339))
		if strings.HasPrefix(v.URL, "/") {
			// No server runs on the data dir, so its public URL is not known here.
			fmt.Fprintln(out, "(on the server's public URL, --public-url, such as https://mail.example.com"+v.URL+")")
		}
		fmt.Fprintln(out, v.URL)
	}
	add := &cobra.Command{
		Use:   "add",
		Short: "Add a member to an account; prints a one-time link (24 h) where the person sets a password",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAdmin(cmd, true, func(a app.Admin) error {
				v, err := a.AddMember(account, email, role)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "added %s to account %s as %s\n", v.Email, v.AccountID, v.Role)
				printLink(cmd, v)
				return nil
			})
		},
	}
	add.Flags().StringVar(&role, "role", "", "owner, admin, developer or viewer (required)")
	add.MarkFlagRequired("role")

	reset := &cobra.Command{
		Use:   "reset-password",
		Short: "Print a new one-time link (24 h) where a member sets a new password",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAdmin(cmd, true, func(a app.Admin) error {
				v, err := a.ResetPassword(account, email)
				if err != nil {
					return err
				}
				printLink(cmd, v)
				return nil
			})
		},
	}
	remove := &cobra.Command{
		Use:   "remove",
		Short: "Remove a member from an account and end that person's sessions in it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAdmin(cmd, true, func(a app.Admin) error {
				v, err := a.RemoveMember(account, email, keepKeys)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "removed %s (%s) from account %s\n", v.Email, v.Role, v.AccountID)
				for _, k := range v.RevokedKeys {
					fmt.Fprintf(out, "revoked API key %s %q (%s), which %s made\n", k.ID, k.Name, k.Prefix, v.Email)
				}
				return nil
			})
		},
	}
	remove.Flags().BoolVar(&keepKeys, "keep-keys", false, "keep the API keys the person made (by default they are revoked)")
	for _, c := range []*cobra.Command{add, reset, remove} {
		c.Flags().StringVar(&account, "account", "", "account id (required)")
		c.Flags().StringVar(&email, "email", "", "the person's email address (required)")
		c.MarkFlagRequired("account")
		c.MarkFlagRequired("email")
		cmd.AddCommand(c)
	}
	return cmd
}
