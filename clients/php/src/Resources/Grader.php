<?php
declare(strict_types=1);

namespace Mailbolt\Resources;

use Mailbolt\Response;

final class Grader extends Resource
{
    /**
     * POST /v1/grader/check: the public domain-only check.
     *
     * @param string|array<string, mixed> $check a domain, or {domain, selectors}
     */
    public function check(string|array $check): Response
    {
        if (is_string($check)) {
            $check = ['domain' => $check];
        }
        return $this->call('POST', '/v1/grader/check', [], $check);
    }

    /**
     * POST /v1/grader/submit: a full message, scored and stored.
     *
     * @param array<string, mixed> $submission from, to, subject, body_text, headers, …
     * @param array{idempotency_key?: string} $options
     */
    public function submit(array $submission, array $options = []): Response
    {
        return $this->call('POST', '/v1/grader/submit', [], $submission, $options);
    }

    /** GET /v1/grader/results/{id} */
    public function getResult(string $id): Response
    {
        return $this->call('GET', '/v1/grader/results/' . self::seg($id));
    }

    /**
     * GET /v1/grader/history, one page.
     *
     * @param array<string, mixed> $params page, per_page (1 to 100)
     */
    public function history(array $params = []): Response
    {
        return $this->call('GET', '/v1/grader/history', $params);
    }

    /**
     * Every stored result, newest first, across all pages of the history.
     *
     * @param array<string, mixed> $params per_page
     * @return \Generator<int, array<string, mixed>>
     */
    public function allHistory(array $params = []): \Generator
    {
        $params['page'] = (int) ($params['page'] ?? 1);
        while (true) {
            $page = $this->history($params);
            $items = $page['data'] ?? [];
            foreach ($items as $item) {
                yield $item;
            }
            $perPage = (int) ($page['per_page'] ?? 0);
            if ($items === [] || $perPage <= 0 || $params['page'] * $perPage >= (int) ($page['total'] ?? 0)) {
                return;
            }
            $params['page']++;
        }
    }
}
