# syntax=docker/dockerfile:1
# flotilla: one image for the board and for worker hosts (see docs/OPERATING.md).

FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json vite.sim.config.ts ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:20-slim
# Workers run exit criteria with bash and keep each attempt on a git branch.
RUN apt-get update \
  && apt-get install -y --no-install-recommends git bash ca-certificates openssh-client \
  && rm -rf /var/lib/apt/lists/*
# Agent CLIs are optional and pinned by whoever builds the image, for example
#   docker compose build --build-arg AGENT_CLIS="@anthropic-ai/claude-code@2.1.197 @openai/codex"
# A host advertises only the CLIs it detects, so an image without any still verifies and gates.
ARG AGENT_CLIS=""
RUN if [ -n "$AGENT_CLIS" ]; then npm install -g $AGENT_CLIS && npm cache clean --force; fi
WORKDIR /app
ENV NODE_ENV=production \
    FLOTILLA_HOME=/home/node/.cache/flotilla
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY bin ./bin
COPY adapters ./adapters
COPY examples ./examples
# Commits made by agents need an identity; a deployment may override it with GIT_AUTHOR_* env.
RUN git config --system user.name "flotilla" && git config --system user.email "flotilla@localhost"
USER node
EXPOSE 3000
ENTRYPOINT ["node", "bin/flotilla.js"]
CMD ["--help"]
