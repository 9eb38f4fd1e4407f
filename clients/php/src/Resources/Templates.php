<?php
declare(strict_types=1);

namespace Mailbolt\Resources;

use Mailbolt\Page;
use Mailbolt\Response;

final class Templates extends Resource
{
    use Listable;

    public const PATH = '/v1/templates';

    /**
     * POST /v1/templates
     *
     * @param array<string, mixed> $template name, subject, html, text, strict
     * @param array{idempotency_key?: string} $options
     */
    public function create(array $template, array $options = []): Response
    {
        return $this->call('POST', self::PATH, [], $template, $options);
    }

    /** GET /v1/templates/{id}; $version null or 0: the newest. */
    public function get(string $id, ?int $version = null): Response
    {
        return $this->call('GET', self::PATH . '/' . self::seg($id), ['version' => $version]);
    }

    /**
     * PUT /v1/templates/{id}: a new version.
     *
     * @param array<string, mixed> $template
     * @param array{idempotency_key?: string} $options
     */
    public function update(string $id, array $template, array $options = []): Response
    {
        return $this->call('PUT', self::PATH . '/' . self::seg($id), [], $template, $options);
    }

    /**
     * GET /v1/templates/{id}/versions, one page.
     *
     * @param array<string, mixed> $params
     */
    public function listVersions(string $id, array $params = []): Page
    {
        return $this->page(self::PATH . '/' . self::seg($id) . '/versions', $params);
    }

    /**
     * Every version of a template, across all pages.
     *
     * @param array<string, mixed> $params
     * @return \Generator<int, array<string, mixed>>
     */
    public function allVersions(string $id, array $params = []): \Generator
    {
        return $this->walkItems(self::PATH . '/' . self::seg($id) . '/versions', $params);
    }

    /**
     * POST /v1/templates/{id}/render
     *
     * @param array<string, mixed> $params data, version
     * @param array{idempotency_key?: string} $options
     */
    public function render(string $id, array $params = [], array $options = []): Response
    {
        return $this->call('POST', self::PATH . '/' . self::seg($id) . '/render', [], (object) $params, $options);
    }
}
