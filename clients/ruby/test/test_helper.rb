# frozen_string_literal: true

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
require "minitest/autorun"
require "json"
require "socket"
require "mailbolt"

module MailboltTest
  VECTOR_PATH = ENV["MAILBOLT_WEBHOOK_VECTOR"] ||
                File.expand_path("../../../testdata/webhooks/signature.json", __dir__)

  def self.vector = @vector ||= JSON.parse(File.read(VECTOR_PATH))

  # Tests against the real server started by clients/harness.sh; skipped without it.
  module Live
    def setup
      skip "MAILBOLT_BASE_URL is not set (run through clients/harness.sh)" if ENV["MAILBOLT_BASE_URL"].to_s.empty?
      super
    end

    def live = @live ||= Mailbolt::Client.new
    def sandbox = @sandbox ||= Mailbolt::Client.new(api_key: ENV.fetch("MAILBOLT_TEST_API_KEY"))
    def unique = "#{Process.pid}-#{SecureRandom.hex(4)}"

    def test_message(**extra)
      { from: "Acme <orders@example.com>", to: ["ann@example.net"], subject: "Order", text: "Thanks!" }.merge(extra)
    end
  end

  # A CA and a server certificate for 127.0.0.1 signed by it, made on the fly.
  module TestCA
    def self.make(dir)
      ca_key = OpenSSL::PKey::EC.generate("prime256v1")
      ca = cert(ca_key, "CN=Mailbolt Test CA", ca_key, nil, ca: true)
      key = OpenSSL::PKey::EC.generate("prime256v1")
      leaf = cert(key, "CN=127.0.0.1", ca_key, ca, ca: false)
      File.write(File.join(dir, "ca.pem"), ca.to_pem)
      ctx = OpenSSL::SSL::SSLContext.new
      ctx.cert = leaf
      ctx.key = key
      [File.join(dir, "ca.pem"), ctx]
    end

    def self.cert(key, subject, signer_key, issuer, ca:)
      c = OpenSSL::X509::Certificate.new
      c.version = 2
      c.serial = OpenSSL::BN.rand(64)
      c.subject = OpenSSL::X509::Name.parse(subject)
      c.issuer = issuer ? issuer.subject : c.subject
      c.public_key = key
      c.not_before = Time.now - 60
      c.not_after = Time.now + 3600
      ef = OpenSSL::X509::ExtensionFactory.new(issuer || c, c)
      if ca
        c.add_extension(ef.create_extension("basicConstraints", "CA:TRUE", true))
        c.add_extension(ef.create_extension("keyUsage", "keyCertSign,cRLSign", true))
      else
        c.add_extension(ef.create_extension("basicConstraints", "CA:FALSE", true))
        c.add_extension(ef.create_extension("subjectAltName", "IP:127.0.0.1", false))
      end
      c.sign(signer_key, OpenSSL::Digest.new("SHA256"))
      c
    end
  end

  # A one-thread HTTP/1.1 server on a loopback port that answers a scripted list
  # of [status, headers, body] and records every request, for tests that need
  # answers the real server gives only by chance (503, 504).
  class FakeServer
    Request = Struct.new(:method, :path, :headers, :body)
    attr_reader :requests

    def initialize(answers, tls: nil)
      @tls = tls
      @answers = answers.dup
      @requests = Queue.new
      @server = TCPServer.new("127.0.0.1", 0)
      @thread = Thread.new { serve }
    end

    def url = "#{@tls ? 'https' : 'http'}://127.0.0.1:#{@server.addr[1]}"

    def recorded
      out = []
      out << @requests.pop until @requests.empty?
      out
    end

    def close
      @server.close
      @thread.join(2)
    end

    private

    def serve
      loop do
        sock = @server.accept
        begin
          sock = OpenSSL::SSL::SSLSocket.new(sock, @tls).tap { |s| s.sync_close = true }.accept if @tls
          handle(sock)
        rescue OpenSSL::SSL::SSLError, SystemCallError, IOError
          nil # a refused handshake: the client's side is what the test checks
        ensure
          sock&.close
        end
      end
    rescue IOError, Errno::EBADF
      nil
    end

    def handle(sock)
      line = sock.gets or return
      method, path, = line.split(" ")
      headers = {}
      while (h = sock.gets) && h != "\r\n"
        k, v = h.split(":", 2)
        headers[k.downcase] = v.strip
      end
      body = headers["content-length"] ? sock.read(headers["content-length"].to_i) : nil
      @requests << Request.new(method, path, headers, body)
      status, extra, payload = @answers.shift || [500, {}, '{"error":{"code":"INTERNAL_ERROR","message":"no answer left"}}']
      payload = payload.to_s
      out = +"HTTP/1.1 #{status} X\r\nConnection: close\r\nContent-Length: #{payload.bytesize}\r\n"
      out << "Content-Type: application/json\r\n" unless payload.empty?
      extra.each { |k, v| out << "#{k}: #{v}\r\n" }
      sock.write(out << "\r\n" << payload)
    end
  end
end
