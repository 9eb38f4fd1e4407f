# frozen_string_literal: true

module Mailbolt
  # Percent-encodes one path segment (an id, or a recipient address).
  def self.escape_segment(value)
    value.to_s.b.gsub(/[^A-Za-z0-9\-._~]/) { |c| format("%%%02X", c.ord) }
  end

  module Resources
    class Base
      def initialize(client)
        @client = client
      end

      def inspect = "#<#{self.class.name}>"

      private

      def seg(value) = Mailbolt.escape_segment(value)

      def get(path, query = nil) = @client.request(:get, path, query: query)

      def write(method, path, body = nil, idempotency_key: nil)
        @client.request(method, path, body: body, idempotency_key: idempotency_key)
      end

      # Drops nil values, so optional fields not given are not sent.
      def fields(hash) = hash.compact

      def fetch_page(path, query)
        q = query.compact
        if q.key?(:page) && q.key?(:cursor)
          raise ArgumentError, "page: and cursor: pick different pagination modes; give one"
        end

        @client.request(:get, path, query: q, page: true)
      end

      # An Enumerator over every page, from the first. mode: :cursor (the default,
      # cheap at any depth) or :page (follows the Link header's rel="next").
      def page_enum(path, query, mode)
        q = query.compact
        case mode
        when :cursor then q.delete(:page)
        when :page then q[:page] ||= 1
        else raise ArgumentError, "mode must be :cursor or :page, not #{mode.inspect}"
        end
        Enumerator.new do |y|
          loop do
            current = fetch_page(path, q)
            y << current
            nxt = current.next_params
            break if nxt.nil? || current.empty?

            q = q.merge(nxt.transform_keys(&:to_sym))
          end
        end
      end

      def items(pages_enum)
        Enumerator.new { |y| pages_enum.each { |p| p.each { |item| y << item } } }
      end
    end

    # A resource with a paginated list: #list (one page), #pages (Enumerator
    # of pages), #each_item / #all (Enumerator of items across pages).
    module Listing
      def list(limit: nil, cursor: nil, page: nil, **filters)
        fetch_page(list_path, { limit: limit, cursor: cursor, page: page, **filters })
      end

      def pages(mode: :cursor, limit: nil, **filters)
        page_enum(list_path, { limit: limit, **filters }, mode)
      end

      def each_item(mode: :cursor, limit: nil, **filters, &block)
        enum = items(pages(mode: mode, limit: limit, **filters))
        block ? enum.each(&block) : enum
      end
      alias all each_item
    end

    class Messages < Base
      include Listing

      # POST /v1/messages. Fields as in the API (from:, to:, subject:, html:, text:,
      # cc:, bcc:, reply_to:, headers:, attachments:, template_id:, template_version:,
      # template_data:, send_at:, campaign_id:, metadata:, tags:, tracking:, ip_pool:,
      # unsubscribe:). One Idempotency-Key (yours or a fresh UUID) covers every retry.
      # Named send as the API reads; Object#send stays reachable as __send__.
      def send(idempotency_key: nil, **message)
        write(:post, "/v1/messages", fields(message), idempotency_key: idempotency_key)
      end

      # POST /v1/messages/batch with an Array of message Hashes.
      def send_batch(messages, idempotency_key: nil)
        write(:post, "/v1/messages/batch", { messages: messages.map { |m| m.to_h.compact } },
              idempotency_key: idempotency_key)
      end

      def get(id) = super("/v1/messages/#{seg(id)}")

      # The message's source (RFC 5322 bytes, a String) as sent to one recipient,
      # with the DKIM-Signature of its latest attempt when it was signed;
      # recipient: may be left out when the message has exactly one.
      def raw(id, recipient: nil)
        @client.request(:get, "/v1/messages/#{seg(id)}/raw", query: { recipient: recipient }).data.to_s.b
      end

      # POST /v1/messages/{id}/cancel: a queued or scheduled message.
      def cancel(id, idempotency_key: nil)
        write(:post, "/v1/messages/#{seg(id)}/cancel", idempotency_key: idempotency_key)
      end

      # Filters: status:, campaign_id:, tag:, recipient:, since:, until:.
      def list_path = "/v1/messages"
    end

    class Events < Base
      include Listing

      # Filters: type:, message_id:, recipient:, since:, until:.
      def list_path = "/v1/events"
    end

    class ApiKeys < Base
      include Listing

      def list_path = "/v1/api-keys"

      def create(name:, scopes: nil, mode: nil, expires_at: nil, idempotency_key: nil)
        write(:post, "/v1/api-keys", fields(name: name, scopes: scopes, mode: mode, expires_at: expires_at),
              idempotency_key: idempotency_key)
      end

      def get(id) = super("/v1/api-keys/#{seg(id)}")

      def revoke(id, idempotency_key: nil)
        write(:delete, "/v1/api-keys/#{seg(id)}", idempotency_key: idempotency_key)
      end
    end

    class Suppressions < Base
      include Listing

      def list_path = "/v1/suppressions"

      def add(recipient:, reason: nil, idempotency_key: nil)
        write(:post, "/v1/suppressions", fields(recipient: recipient, reason: reason),
              idempotency_key: idempotency_key)
      end

      # Every entry of the recipient, or with stream: (transactional or
      # broadcast) only that stream's.
      def delete(recipient, stream: nil, idempotency_key: nil)
        @client.request(:delete, "/v1/suppressions/#{seg(recipient)}", query: { stream: stream }, idempotency_key: idempotency_key)
      end

      # POST /v1/suppressions/import: up to 10,000 at once, all or nothing (a bad
      # row raises, with details["index"], and none is added). The answer has
      # "added" and "already_present".
      def import(suppressions, idempotency_key: nil)
        write(:post, "/v1/suppressions/import", { suppressions: suppressions.to_a }, idempotency_key: idempotency_key)
      end

      # GET /v1/suppressions/export: the whole list as CSV text
      # (recipient,reason,stream), the format import takes; stream: keeps the
      # entries that name that stream.
      def export(stream: nil)
        get("/v1/suppressions/export", { stream: stream }).data.to_s.dup.force_encoding(Encoding::UTF_8)
      end
    end

    class Domains < Base
      include Listing

      def list_path = "/v1/domains"

      def create(name:, dkim_algorithm: nil, idempotency_key: nil)
        write(:post, "/v1/domains", fields(name: name, dkim_algorithm: dkim_algorithm),
              idempotency_key: idempotency_key)
      end

      def get(id) = super("/v1/domains/#{seg(id)}")

      def delete(id, idempotency_key: nil)
        write(:delete, "/v1/domains/#{seg(id)}", idempotency_key: idempotency_key)
      end

      def verify(id, idempotency_key: nil)
        write(:post, "/v1/domains/#{seg(id)}/verify", idempotency_key: idempotency_key)
      end

      def rotate_dkim(id, dkim_algorithm: nil, idempotency_key: nil)
        write(:post, "/v1/domains/#{seg(id)}/dkim/rotate", fields(dkim_algorithm: dkim_algorithm),
              idempotency_key: idempotency_key)
      end
    end

    class Templates < Base
      include Listing

      def list_path = "/v1/templates"

      def create(name:, subject:, html: nil, text: nil, strict: nil, idempotency_key: nil)
        write(:post, "/v1/templates", fields(name: name, subject: subject, html: html, text: text, strict: strict),
              idempotency_key: idempotency_key)
      end

      def get(id, version: nil) = super("/v1/templates/#{seg(id)}", { version: version })

      def update(id, name: nil, subject: nil, html: nil, text: nil, strict: nil, idempotency_key: nil)
        write(:put, "/v1/templates/#{seg(id)}",
              fields(name: name, subject: subject, html: html, text: text, strict: strict),
              idempotency_key: idempotency_key)
      end

      def list_versions(id, limit: nil, cursor: nil, page: nil)
        fetch_page("/v1/templates/#{seg(id)}/versions", { limit: limit, cursor: cursor, page: page })
      end

      def version_pages(id, mode: :cursor, limit: nil)
        page_enum("/v1/templates/#{seg(id)}/versions", { limit: limit }, mode)
      end

      def render(id, data: nil, version: nil, idempotency_key: nil)
        write(:post, "/v1/templates/#{seg(id)}/render", fields(data: data, version: version),
              idempotency_key: idempotency_key)
      end
    end

    class Webhooks < Base
      include Listing

      def list_path = "/v1/webhooks"

      def create(url:, events:, description: nil, idempotency_key: nil)
        write(:post, "/v1/webhooks", fields(url: url, events: events, description: description),
              idempotency_key: idempotency_key)
      end

      def get(id) = super("/v1/webhooks/#{seg(id)}")

      def delete(id, idempotency_key: nil)
        write(:delete, "/v1/webhooks/#{seg(id)}", idempotency_key: idempotency_key)
      end

      # Changes any of url:, events:, description:, enabled:; the others and the
      # secret are kept.
      def update(id, idempotency_key: nil, **changes)
        write(:patch, "/v1/webhooks/#{seg(id)}", changes, idempotency_key: idempotency_key)
      end

      # Sends a signed webhook.test event now; the answer has the receiver's
      # status_code, latency_ms and response (its first 1 KB), or error.
      def test(id, idempotency_key: nil)
        write(:post, "/v1/webhooks/#{seg(id)}/test", {}, idempotency_key: idempotency_key)
      end

      def rotate_secret(id, idempotency_key: nil)
        write(:post, "/v1/webhooks/#{seg(id)}/rotate-secret", {}, idempotency_key: idempotency_key)
      end

      # Filter: status:.
      def list_deliveries(id, limit: nil, cursor: nil, page: nil, status: nil)
        fetch_page("/v1/webhooks/#{seg(id)}/deliveries", { limit: limit, cursor: cursor, page: page, status: status })
      end

      def delivery_pages(id, mode: :cursor, limit: nil, status: nil)
        page_enum("/v1/webhooks/#{seg(id)}/deliveries", { limit: limit, status: status }, mode)
      end

      def replay_event(id, event_id, idempotency_key: nil)
        write(:post, "/v1/webhooks/#{seg(id)}/events/#{seg(event_id)}/replay", {},
              idempotency_key: idempotency_key)
      end

      # Verifies a webhook request; see Mailbolt::Webhook.verify.
      def verify(body, headers, *secrets, **opts) = Mailbolt::Webhook.verify(body, headers, *secrets, **opts)
    end

    class Team < Base
      include Listing

      def list_path = "/v1/team"

      def invite(email:, role:, idempotency_key: nil)
        write(:post, "/v1/team/invite", { email: email, role: role }, idempotency_key: idempotency_key)
      end
    end

    class Analytics < Base
      # GET /v1/analytics/summary. from:/to: dates or times, campaign_id:, domain:.
      def summary(from: nil, to: nil, campaign_id: nil, domain: nil)
        get("/v1/analytics/summary", { from: from, to: to, campaign_id: campaign_id, domain: domain })
      end
    end

    class Ips < Base
      # Every dedicated IP at once (not paginated).
      def list = get("/v1/ips")

      def list_pools = get("/v1/ips/pools")
    end

    class Account < Base
      def get = super("/v1/account")

      # GET /v1/audit-log: one page of the account's changes, newest first.
      def audit_log(limit: nil, cursor: nil, page: nil)
        fetch_page("/v1/audit-log", { limit: limit, cursor: cursor, page: page })
      end

      # Every page of the audit log (mode: :cursor or :page).
      def audit_log_pages(mode: :cursor, limit: nil) = page_enum("/v1/audit-log", { limit: limit }, mode)
    end

    class Grader < Base
      # POST /v1/grader/check: public, sent without the API key.
      def check(domain:, selectors: nil)
        @client.request(:post, "/v1/grader/check", body: fields(domain: domain, selectors: selectors), auth: false)
      end

      # POST /v1/grader/submit (scope grader:write). Fields: from:, to:, subject:,
      # body_text:, headers:, selectors:, sender_ip:, helo_hostname:, mail_from:.
      def submit(idempotency_key: nil, **email)
        write(:post, "/v1/grader/submit", fields(email), idempotency_key: idempotency_key)
      end

      def result(id) = get("/v1/grader/results/#{seg(id)}")

      def history(page: nil, per_page: nil) = get("/v1/grader/history", { page: page, per_page: per_page })
    end

    # Inbound email (docs/inbound.md): domains the account receives mail for, routes
    # from their addresses to webhooks, and the raw messages received.
    class Inbound < Base
      def list_domains(limit: nil, cursor: nil, page: nil) =
        fetch_page("/v1/inbound/domains", { limit: limit, cursor: cursor, page: page })

      # The answer names the MX and TXT records to publish.
      def create_domain(name:, idempotency_key: nil)
        write(:post, "/v1/inbound/domains", { name: name }, idempotency_key: idempotency_key)
      end

      def get_domain(id) = get("/v1/inbound/domains/#{seg(id)}")

      def delete_domain(id, idempotency_key: nil)
        write(:delete, "/v1/inbound/domains/#{seg(id)}", idempotency_key: idempotency_key)
      end

      def verify_domain(id, idempotency_key: nil)
        write(:post, "/v1/inbound/domains/#{seg(id)}/verify", idempotency_key: idempotency_key)
      end

      def list_routes(limit: nil, cursor: nil, page: nil) =
        fetch_page("/v1/inbound/routes", { limit: limit, cursor: cursor, page: page })

      # pattern: a local part such as "support", or "*".
      def create_route(domain_id:, pattern:, webhook_id:, idempotency_key: nil)
        write(:post, "/v1/inbound/routes", { domain_id: domain_id, pattern: pattern, webhook_id: webhook_id },
              idempotency_key: idempotency_key)
      end

      def get_route(id) = get("/v1/inbound/routes/#{seg(id)}")

      def delete_route(id, idempotency_key: nil)
        write(:delete, "/v1/inbound/routes/#{seg(id)}", idempotency_key: idempotency_key)
      end

      # The message exactly as received (message/rfc822), as a binary String.
      def raw(id) = @client.request(:get, "/v1/inbound/messages/#{seg(id)}/raw").data.to_s.b
    end
  end
end
