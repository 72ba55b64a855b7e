# The SQS queue tidal reads with --aws-interruption-queue=<name>, and the
# EventBridge rules that send EC2's spot interruption warnings, rebalance
# recommendations, instance state changes and AWS Health scheduled changes
# to it.

variable "queue_name" {
  type    = string
  default = "tidal-interruptions"
}

resource "aws_sqs_queue" "tidal_interruptions" {
  name                      = var.queue_name
  message_retention_seconds = 300
  sqs_managed_sse_enabled   = true
}

resource "aws_sqs_queue_policy" "tidal_interruptions" {
  queue_url = aws_sqs_queue.tidal_interruptions.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = ["events.amazonaws.com", "sqs.amazonaws.com"] }
      Action    = "sqs:SendMessage"
      Resource  = aws_sqs_queue.tidal_interruptions.arn
    }]
  })
}

locals {
  tidal_interruption_rules = {
    spot-interruption = { source = ["aws.ec2"], detail-type = ["EC2 Spot Instance Interruption Warning"] }
    rebalance         = { source = ["aws.ec2"], detail-type = ["EC2 Instance Rebalance Recommendation"] }
    state-change = {
      source      = ["aws.ec2"], detail-type = ["EC2 Instance State-change Notification"],
      detail      = { state = ["stopping", "stopped", "shutting-down", "terminated"] }
    }
    scheduled-change = {
      source      = ["aws.health"], detail-type = ["AWS Health Event"],
      detail      = { service = ["EC2"], eventTypeCategory = ["scheduledChange"] }
    }
  }
}

resource "aws_cloudwatch_event_rule" "tidal_interruptions" {
  for_each      = local.tidal_interruption_rules
  name          = "tidal-${each.key}"
  event_pattern = jsonencode(each.value)
}

resource "aws_cloudwatch_event_target" "tidal_interruptions" {
  for_each = local.tidal_interruption_rules
  rule     = aws_cloudwatch_event_rule.tidal_interruptions[each.key].name
  arn      = aws_sqs_queue.tidal_interruptions.arn
}
