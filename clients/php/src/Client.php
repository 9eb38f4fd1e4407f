<?php
declare(strict_types=1);

namespace Mailbolt;

use Mailbolt\Exception\ApiException;
use Mailbolt\Exception\ConnectionException;
use Mailbolt\Exception\MailboltException;

/**
 * The Mailbolt API client.
 *
 *     $client = new Mailbolt\Client(); // MAILBOLT_API_KEY, MAILBOLT_BASE_URL, MAILBOLT_CA_FILE
 *     $message = $client->messages->send(['from' => ..., 'to' => [...], 'subject' => ..., 'text' => ...]);
 *
 * Options (each optional): api_key, base_url, ca_file (extra trusted roots, PEM),
 * max_retries (3), timeout (seconds, 30), backoff_base (seconds, 0.5),
 * backoff_max (seconds, 30), user_agent, sleep (callable(float $seconds)).
 */
final class Client
{
    public const VERSION = '0.1.0';
    public const DEFAULT_BASE_URL = 'http://127.0.0.1:8080';
    /** The transient codes (spec §7): the only errors that are retried. */
    public const RETRYABLE_CODES = ['RATE_LIMIT_EXCEEDED', 'SERVICE_UNAVAILABLE', 'GATEWAY_TIMEOUT'];

    public readonly Resources\Account $account;
    public readonly Resources\Messages $messages;
    public readonly Resources\Events $events;
    public readonly Resources\ApiKeys $apiKeys;
    public readonly Resources\Suppressions $suppressions;
    public readonly Resources\Domains $domains;
    public readonly Resources\Templates $templates;
    public readonly Resources\Webhooks $webhooks;
    public readonly Resources\Team $team;
    public readonly Resources\Analytics $analytics;
    public readonly Resources\Ips $ips;
    public readonly Resources\Grader $grader;
    public readonly Resources\Inbound $inbound;

    private string $apiKey;
    private string $baseUrl;
    private ?string $caFile;
    private int $maxRetries;
    private float $timeout;
    private float $backoffBase;
    private float $backoffMax;
    private string $userAgent;
    /** @var callable(float): void */
    private $sleep;
    /** The last answer (success or error) this client received. */
    public ?Response $lastResponse = null;

    /** @param array<string, mixed> $options */
    public function __construct(array $options = [])
    {
        $known = ['api_key', 'base_url', 'ca_file', 'max_retries', 'timeout', 'backoff_base', 'backoff_max', 'user_agent', 'sleep'];
        foreach (array_keys($options) as $k) {
            if (!in_array($k, $known, true)) {
                throw new \InvalidArgumentException("unknown Mailbolt\\Client option: $k");
            }
        }
        $this->apiKey = (string) ($options['api_key'] ?? self::env('MAILBOLT_API_KEY') ?? '');
        $this->baseUrl = rtrim((string) ($options['base_url'] ?? self::env('MAILBOLT_BASE_URL') ?? self::DEFAULT_BASE_URL), '/');
        if (str_ends_with($this->baseUrl, '/v1')) {
            $this->baseUrl = substr($this->baseUrl, 0, -3);
        }
        $ca = $options['ca_file'] ?? self::env('MAILBOLT_CA_FILE');
        $this->caFile = $ca === null || $ca === '' ? null : (string) $ca;
        $this->maxRetries = max(0, (int) ($options['max_retries'] ?? 3));
        $this->timeout = (float) ($options['timeout'] ?? 30.0);
        $this->backoffBase = (float) ($options['backoff_base'] ?? 0.5);
        $this->backoffMax = (float) ($options['backoff_max'] ?? 30.0);
        $this->userAgent = (string) ($options['user_agent'] ?? 'mailbolt-php/' . self::VERSION);
        $this->sleep = $options['sleep'] ?? static function (float $s): void {
            usleep((int) round($s * 1e6));
        };

        $this->account = new Resources\Account($this);
        $this->messages = new Resources\Messages($this);
        $this->events = new Resources\Events($this);
        $this->apiKeys = new Resources\ApiKeys($this);
        $this->suppressions = new Resources\Suppressions($this);
        $this->domains = new Resources\Domains($this);
        $this->templates = new Resources\Templates($this);
        $this->webhooks = new Resources\Webhooks($this);
        $this->team = new Resources\Team($this);
        $this->analytics = new Resources\Analytics($this);
        $this->ips = new Resources\Ips($this);
        $this->grader = new Resources\Grader($this);
        $this->inbound = new Resources\Inbound($this);
    }

    private static function env(string $name): ?string
    {
        $v = getenv($name);
        return $v === false || $v === '' ? null : $v;
    }

    public function baseUrl(): string
    {
        return $this->baseUrl;
    }

    /** A new random Idempotency-Key (a UUID v4). */
    public static function newIdempotencyKey(): string
    {
        $b = random_bytes(16);
        $b[6] = chr((ord($b[6]) & 0x0f) | 0x40);
        $b[8] = chr((ord($b[8]) & 0x3f) | 0x80);
        return vsprintf('%s%s-%s-%s-%s-%s%s%s', str_split(bin2hex($b), 4));
    }

    /**
     * Makes one API call, retrying the transient codes with exponential backoff
     * and jitter (Retry-After replaces the computed delay when the server sends
     * it). A write sends one Idempotency-Key across all its attempts: the
     * caller's (option idempotency_key) or a generated one.
     *
     * @param array<string, mixed> $query
     * @param array<string, mixed>|object|null $body encoded as JSON; null: no body
     * @param array{idempotency_key?: string, headers?: array<string, string>, page?: bool} $options
     */
    public function request(string $method, string $path, array $query = [], array|object|null $body = null, array $options = []): Response
    {
        $method = strtoupper($method);
        $headers = [
            'Accept' => 'application/json',
            'User-Agent' => $this->userAgent,
        ];
        if ($this->apiKey !== '') {
            $headers['X-API-Key'] = $this->apiKey;
        }
        $idempotencyKey = null;
        if (in_array($method, ['POST', 'PUT', 'PATCH', 'DELETE'], true)) {
            $idempotencyKey = (string) ($options['idempotency_key'] ?? self::newIdempotencyKey());
            $headers['Idempotency-Key'] = $idempotencyKey;
        }
        $content = null;
        if ($body !== null) {
            $content = json_encode($body, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_THROW_ON_ERROR);
            $headers['Content-Type'] = 'application/json';
        }
        foreach ($options['headers'] ?? [] as $k => $v) {
            $headers[$k] = $v;
        }
        $url = $this->baseUrl . $path;
        $query = array_filter($query, static fn ($v) => $v !== null);
        if ($query !== []) {
            $url .= '?' . http_build_query(array_map(static fn ($v) => is_bool($v) ? ($v ? 'true' : 'false') : $v, $query), '', '&', PHP_QUERY_RFC3986);
        }

        for ($attempt = 0; ; $attempt++) {
            [$status, $respHeaders, $respBody] = $this->send($method, $url, $headers, $content);
            $data = null;
            if ($respBody !== '') {
                $data = json_decode($respBody, true);
            }
            $class = !empty($options['page']) ? Page::class : Response::class;
            $response = new $class($status, $respHeaders, $respBody, $data, $idempotencyKey);
            $this->lastResponse = $response;
            if ($status < 400) {
                return $response;
            }
            $error = is_array($data) && is_array($data['error'] ?? null) ? $data['error'] : [];
            $code = is_string($error['code'] ?? null) ? $error['code'] : self::codeForStatus($status);
            $message = is_string($error['message'] ?? null) ? $error['message'] : "HTTP $status";
            $details = is_array($error['details'] ?? null) ? $error['details'] : [];
            $exception = ApiException::create($status, $code, $message, $details, $respHeaders['x-request-id'] ?? null, $respHeaders, $respBody);
            if (!in_array($code, self::RETRYABLE_CODES, true) || $attempt >= $this->maxRetries) {
                throw $exception;
            }
            ($this->sleep)($this->retryDelay($attempt, $exception->getRetryAfter()));
        }
    }

    /** The delay before retry number $attempt+1: Retry-After when given, else exponential backoff with jitter. */
    public function retryDelay(int $attempt, ?float $retryAfter): float
    {
        $jitter = mt_rand() / mt_getrandmax();
        if ($retryAfter !== null) {
            // The server's delay, plus a little jitter so that waiting clients do not return together.
            return min($this->backoffMax, $retryAfter) + 0.1 * $jitter;
        }
        $cap = min($this->backoffMax, $this->backoffBase * (2 ** $attempt));
        return $cap / 2 + $jitter * $cap / 2;
    }

    private static function codeForStatus(int $status): string
    {
        return match ($status) {
            400 => 'VALIDATION_ERROR',
            401 => 'UNAUTHORIZED',
            403 => 'FORBIDDEN',
            404 => 'NOT_FOUND',
            409 => 'CONFLICT',
            429 => 'RATE_LIMIT_EXCEEDED',
            503 => 'SERVICE_UNAVAILABLE',
            504 => 'GATEWAY_TIMEOUT',
            default => $status >= 500 ? 'INTERNAL_ERROR' : 'HTTP_' . $status,
        };
    }

    /**
     * One HTTP exchange through PHP's stream wrapper (no extension needed).
     *
     * @param array<string, string> $headers
     * @return array{int, array<string, string>, string}
     */
    private function send(string $method, string $url, array $headers, ?string $content): array
    {
        $lines = [];
        foreach ($headers as $k => $v) {
            $lines[] = "$k: $v";
        }
        $lines[] = 'Connection: close';
        $http = [
            'method' => $method,
            'header' => implode("\r\n", $lines),
            'ignore_errors' => true,
            'follow_location' => 0,
            'max_redirects' => 1,
            'protocol_version' => 1.1,
            'timeout' => $this->timeout,
        ];
        if ($content !== null) {
            $http['content'] = $content;
        }
        $ssl = [
            'verify_peer' => true,
            'verify_peer_name' => true,
            'allow_self_signed' => false,
            // TLS 1.2 is the minimum: older protocols are never offered.
            'crypto_method' => STREAM_CRYPTO_METHOD_TLSv1_2_CLIENT | (defined('STREAM_CRYPTO_METHOD_TLSv1_3_CLIENT') ? STREAM_CRYPTO_METHOD_TLSv1_3_CLIENT : 0),
            'disable_compression' => true,
        ];
        if ($this->caFile !== null) {
            $ssl['cafile'] = $this->trustBundle($this->caFile);
        }
        $context = stream_context_create(['http' => $http, 'ssl' => $ssl]);

        $error = null;
        set_error_handler(static function (int $no, string $str) use (&$error): bool {
            $error = $str;
            return true;
        });
        try {
            $stream = fopen($url, 'rb', false, $context);
            $body = $stream === false ? false : stream_get_contents($stream);
            $meta = $stream === false ? [] : stream_get_meta_data($stream);
            if ($stream !== false) {
                fclose($stream);
            }
        } finally {
            restore_error_handler();
        }
        if ($stream === false || $body === false) {
            throw new ConnectionException("mailbolt: $method $url failed: " . ($error ?? 'no answer'));
        }
        if (!empty($meta['timed_out'])) {
            throw new ConnectionException("mailbolt: $method $url timed out after {$this->timeout}s");
        }
        $raw = $meta['wrapper_data'] ?? [];
        $status = 0;
        $respHeaders = [];
        foreach ($raw as $line) {
            if (preg_match('#^HTTP/\S+\s+(\d{3})#', $line, $m) === 1) {
                // A new status line (after a 1xx) starts a new header block.
                $status = (int) $m[1];
                $respHeaders = [];
                continue;
            }
            $pos = strpos($line, ':');
            if ($pos === false) {
                continue;
            }
            $name = strtolower(trim(substr($line, 0, $pos)));
            $value = trim(substr($line, $pos + 1));
            $respHeaders[$name] = isset($respHeaders[$name]) ? $respHeaders[$name] . ', ' . $value : $value;
        }
        if ($status === 0) {
            throw new ConnectionException("mailbolt: $method $url: no HTTP status line in the answer");
        }
        return [$status, $respHeaders, $body];
    }

    /**
     * MAILBOLT_CA_FILE adds roots to the system's; PHP's cafile replaces them, so
     * the two are joined into one bundle in the temp directory.
     */
    private function trustBundle(string $extra): string
    {
        $pem = @file_get_contents($extra);
        if ($pem === false) {
            throw new MailboltException("mailbolt: cannot read the CA file $extra");
        }
        $system = '';
        $locations = openssl_get_cert_locations();
        foreach ([$locations['default_cert_file'] ?? '', '/etc/ssl/certs/ca-certificates.crt', '/etc/pki/tls/certs/ca-bundle.crt'] as $f) {
            if ($f !== '' && is_readable($f)) {
                $system = (string) file_get_contents($f);
                break;
            }
        }
        $bundle = $system . "\n" . $pem . "\n";
        $path = sys_get_temp_dir() . '/mailbolt-php-ca-' . hash('sha256', $bundle) . '.pem';
        if (!is_file($path)) {
            $tmp = $path . '.' . bin2hex(random_bytes(4));
            file_put_contents($tmp, $bundle);
            rename($tmp, $path);
        }
        return $path;
    }
}
