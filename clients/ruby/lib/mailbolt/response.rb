# frozen_string_literal: true

module Mailbolt
  # The X-RateLimit-* headers of an answer (nil when absent).
  RateLimit = Struct.new(:limit, :remaining, :reset, keyword_init: true) do
    def self.from_headers(headers)
      int = ->(name) { v = headers[name]; v && v =~ /\A\d+\z/ ? v.to_i : nil }
      new(limit: int.call("x-ratelimit-limit"), remaining: int.call("x-ratelimit-remaining"),
          reset: int.call("x-ratelimit-reset"))
    end
  end

  # One answer of the API: the decoded JSON body plus status and headers.
  # Read fields with [] (string or symbol keys) or #data.
  class Response
    attr_reader :status, :headers, :data

    def initialize(status:, headers:, data:)
      @status = status
      @headers = headers # lower-cased names
      @data = data
    end

    def [](key)
      return nil unless @data.is_a?(Hash)

      @data[key.to_s]
    end

    def dig(*keys)
      @data.dig(*keys.map { |k| k.is_a?(Symbol) ? k.to_s : k })
    end

    def fetch(key, *default, &block) = @data.fetch(key.to_s, *default, &block)
    def key?(key) = @data.is_a?(Hash) && @data.key?(key.to_s)
    def to_h = @data
    def header(name) = @headers[name.to_s.downcase]
    def request_id = @headers["x-request-id"]
    def rate_limit = RateLimit.from_headers(@headers)
    def idempotent_replayed? = @headers["idempotent-replayed"] == "true"
    alias replayed? idempotent_replayed?

    # Deprecation headers of a deprecated API version (spec §9); nil when absent.
    def deprecation = @headers["deprecation"]
    def sunset = @headers["sunset"]
    def warning = @headers["warning"]

    def inspect = "#<#{self.class.name} #{status} #{@data.inspect}>"
  end

  # One page of a list. Cursor mode: #has_more?, #cursor. Page mode: #page,
  # #total and #links (rel => relative URL, from the Link header).
  class Page < Response
    include Enumerable

    def items = (@data.is_a?(Hash) && @data["data"]) || []
    def each(&block) = items.each(&block)
    def size = items.size
    def empty? = items.empty?
    def limit = self["limit"]
    def cursor = self["cursor"]
    def has_more? = self["has_more"] == true
    def page = self["page"]
    def total = self["total"]
    def page_mode? = !page.nil?

    def links
      @links ||= Mailbolt.parse_link_header(@headers["link"])
    end

    # Query parameters of the next page (nil on the last page).
    def next_params
      if page_mode?
        url = links["next"]
        return nil unless url

        URI.decode_www_form(URI(url).query.to_s).to_h
      elsif has_more? && cursor
        { "cursor" => cursor }
      end
    end
  end
end
