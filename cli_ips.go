package main

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"mailbolt/app"
	"mailbolt/mta/queue"
)

// newIPsCommand manages the source addresses mail leaves from: `ips add`,
// `ips assign`, `ips remove`, `ips list`.
func newIPsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "ips", Short: "Manage dedicated IPs: source addresses, their pools and warm-up"}

	var hostname, pool, warmup string
	add := &cobra.Command{
		Use:   "add ADDR",
		Short: "Register a source address in a pool; its warm-up starts today (UTC)",
		Long: "Register a source address (IPv4 or IPv6) that this host owns. Mail leaving from it\n" +
			"greets with --hostname, which should be the address's PTR name. The IP starts\n" +
			"shared; `ips assign` dedicates it to an account.\n\n" +
			"--warmup is " + strings.Join(queue.ScheduleNames(), " or ") + ", or daily caps such as 50,100,200\n" +
			"(day 1 first; unlimited after the last). See docs/delivery.md.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withAdmin(cmd, true, func(a app.Admin) error {
				ip, err := a.AddIP(args[0], hostname, pool, warmup)
				if err != nil {
					return err
				}
				sched, err := queue.ParseSchedule(ip.Warmup)
				if err != nil {
					return err
				}
				today := "no daily cap"
				if limit, unlimited := sched.Cap(1); !unlimited {
					today = fmt.Sprintf("%d messages today", limit)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "added %s to pool %s (EHLO %s, warm-up %s: %s)\n",
					ip.Address, ip.Pool, ip.Hostname, ip.Warmup, today)
				return nil
			})
		},
	}
	add.Flags().StringVar(&hostname, "hostname", "", "name to greet with in EHLO from this address (required)")
	add.Flags().StringVar(&pool, "pool", app.DefaultPool, "pool name: 1 to 64 characters of a-z, 0-9, _ and -")
	add.Flags().StringVar(&warmup, "warmup", queue.DefaultWarmup, "warm-up schedule: "+strings.Join(queue.ScheduleNames(), ", ")+", or daily caps such as 50,100,200")
	add.MarkFlagRequired("hostname")

	var account string
	var unassign bool
	assign := &cobra.Command{
		Use:   "assign ADDR",
		Short: "Dedicate an IP to an account (within its plan's entitlement), or release it with --unassign",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if unassign {
				account = ""
			}
			return withAdmin(cmd, true, func(a app.Admin) error {
				ip, err := a.AssignIP(args[0], account)
				if err != nil {
					return err
				}
				if ip.AccountID == "" {
					fmt.Fprintf(cmd.OutOrStdout(), "%s is shared (assigned to no account)\n", ip.Address)
					return nil
				}
				fmt.Fprintf(cmd.OutOrStdout(), "assigned %s (pool %s) to account %s\n", ip.Address, ip.Pool, ip.AccountID)
				return nil
			})
		},
	}
	assign.Flags().StringVar(&account, "account", "", "account id to dedicate the IP to")
	assign.Flags().BoolVar(&unassign, "unassign", false, "release the IP: it becomes shared again")
	assign.MarkFlagsOneRequired("account", "unassign")
	assign.MarkFlagsMutuallyExclusive("account", "unassign")

	remove := &cobra.Command{
		Use:   "remove ADDR",
		Short: "Unregister an IP; mail stops leaving from it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withAdmin(cmd, true, func(a app.Admin) error {
				if err := a.RemoveIP(args[0]); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", args[0])
				return nil
			})
		},
	}

	list := &cobra.Command{
		Use:   "list",
		Short: "List IPs with their pool, account and today's warm-up cap and count",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAdmin(cmd, true, func(a app.Admin) error {
				ips, err := a.ListIPs()
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ADDRESS\tHOSTNAME\tPOOL\tACCOUNT\tWARMUP\tDAY\tCAP\tSENT")
				for _, ip := range ips {
					acct := ip.AccountID
					if acct == "" {
						acct = "shared"
					}
					limit := "unlimited"
					if ip.DailyCap != nil {
						limit = strconv.Itoa(*ip.DailyCap)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%d\n", ip.Address, ip.Hostname, ip.Pool, acct,
						ip.Warmup, ip.WarmupDay, limit, ip.SentToday)
				}
				return tw.Flush()
			})
		},
	}
	cmd.AddCommand(add, assign, remove, list)
	return cmd
}

// newPoolsCommand lists the IP pools: `pools list`.
func newPoolsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "pools", Short: "IP pools (made by `ips add --pool`)"}
	list := &cobra.Command{
		Use:   "list",
		Short: "List pools with their addresses and the accounts their IPs are assigned to",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAdmin(cmd, true, func(a app.Admin) error {
				pools, err := a.ListPools()
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "POOL\tADDRESSES\tACCOUNTS\tSHARED")
				for _, p := range pools {
					accts := strings.Join(p.Accounts, ",")
					if accts == "" {
						accts = "-"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", p.Name, strings.Join(p.Addresses, ","), accts, p.Shared)
				}
				return tw.Flush()
			})
		},
	}
	cmd.AddCommand(list)
	return cmd
}
